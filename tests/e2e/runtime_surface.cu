// Runtime calls that libraries make before they do any work: stream capture queries (no stream
// ever captures while graphs are not provided), the thread's capture mode, and driver entry
// points obtained through the runtime, which must be callable and work on the same memory.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <vector>

#include "check.h"

namespace {

__global__ void Fill(int* out, int value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

void CaptureQueries() {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  for (cudaStream_t s : {stream, cudaStream_t{}, cudaStreamLegacy, cudaStreamPerThread}) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    EXPECT(status == cudaStreamCaptureStatusNone);
    status = cudaStreamCaptureStatusActive;
    unsigned long long id = 77;
    CHECK_CUDA(cudaStreamGetCaptureInfo(s, &status, &id));
    EXPECT(status == cudaStreamCaptureStatusNone);
  }
  EXPECT(cudaStreamIsCapturing(stream, nullptr) == cudaErrorInvalidValue);
  CHECK_CUDA(cudaStreamDestroy(stream));
  cudaStreamCaptureStatus status;
  EXPECT(cudaStreamIsCapturing(stream, &status) == cudaErrorInvalidResourceHandle);
  EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);

  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeGlobal);  // every thread starts in global mode
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeRelaxed);
  mode = static_cast<cudaStreamCaptureMode>(9);
  EXPECT(cudaThreadExchangeStreamCaptureMode(&mode) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
}

template <typename Function>
Function EntryPoint(const char* name, unsigned version) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found));
  EXPECT(found == cudaDriverEntryPointSuccess);
  EXPECT(function != nullptr);
  return reinterpret_cast<Function>(function);
}

void DriverEntryPoints() {
  constexpr int n = 256;
  const auto alloc = EntryPoint<PFN_cuMemAlloc_v3020>("cuMemAlloc", 12000);
  const auto free = EntryPoint<PFN_cuMemFree_v3020>("cuMemFree", 12000);
  const auto copy = EntryPoint<PFN_cuMemcpyDtoH_v3020>("cuMemcpyDtoH", 12000);
  CUdeviceptr device = 0;
  EXPECT(alloc(&device, n * sizeof(int)) == CUDA_SUCCESS);
  Fill<<<(n + 127) / 128, 128>>>(reinterpret_cast<int*>(device), 5, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<int> host(n);
  EXPECT(copy(host.data(), device, n * sizeof(int)) == CUDA_SUCCESS);
  for (int i = 0; i < n; ++i) EXPECT(host[i] == 5 + i);
  EXPECT(free(device) == CUDA_SUCCESS);

  // The deprecated form (what older programs call) answers for the runtime's own version.
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK_CUDA(cudaGetDriverEntryPoint("cuMemAlloc", &function, cudaEnableDefault, &found));
#pragma GCC diagnostic pop
  EXPECT(found == cudaDriverEntryPointSuccess && function != nullptr);
  // Unknown, and too new for the version asked: success with a null pointer and the reason.
  function = &found;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuNoSuchCall", &function, 13000,
                                              cudaEnableDefault, &found));
  EXPECT(found == cudaDriverEntryPointSymbolNotFound && function == nullptr);
  function = &found;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 1000, cudaEnableDefault,
                                              &found));
  EXPECT(found == cudaDriverEntryPointVersionNotSufficent && function == nullptr);
  EXPECT(cudaGetDriverEntryPointByVersion(nullptr, &function, 13000, cudaEnableDefault, &found) ==
         cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
}

}  // namespace

int main() {
  CaptureQueries();
  DriverEntryPoints();
  std::printf("runtime_surface: capture queries and driver entry points behave as CUDA's\n");
  return 0;
}
