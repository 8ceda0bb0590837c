// Launch configurations CUDA refuses are refused by the launch itself (CUDA Runtime API,
// cudaLaunchKernel; CUDA Driver API, cuLaunchKernel): the launch returns the error, the
// per-thread last error holds it for cudaPeekAtLastError / cudaGetLastError, and the next
// synchronising call is not poisoned by it. Valid launches around them compute correctly.
#include <cuda.h>

#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

__global__ void Fill(int* out, int value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }

__global__ void __launch_bounds__(128) Bounded(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 7;
}

// Each thread writes its index through dynamic shared memory (a block's worth, `words`).
__global__ void ThroughShared(int* out, int words) {
  extern __shared__ int staging[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) staging[i] = i * 3;
  __syncthreads();
  out[threadIdx.x] = staging[words - 1 - threadIdx.x];
}

// The launch returns `expected`, the last error reports it until cudaGetLastError takes it, and
// the device is still fine for the next synchronisation.
void ExpectRefused(cudaError_t launched, cudaError_t expected, const char* what) {
  if (launched != expected || cudaPeekAtLastError() != expected || cudaGetLastError() != expected ||
      cudaGetLastError() != cudaSuccess) {
    std::fprintf(stderr, "%s: launch returned %s, expected %s\n", what, cudaGetErrorName(launched),
                 cudaGetErrorName(expected));
    std::exit(1);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

int main() {
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 1 << 20));
  void* fill_args[] = {&out, nullptr};
  int value = 5;
  fill_args[1] = &value;
  const void* fill = reinterpret_cast<const void*>(Fill);

  // Too many threads per block, a 0 or oversized grid or block dimension.
  ExpectRefused(cudaLaunchKernel(fill, dim3(1), dim3(2048), fill_args, 0, nullptr),
                cudaErrorInvalidConfiguration, "2048 threads per block");
  ExpectRefused(cudaLaunchKernel(fill, dim3(0), dim3(32), fill_args, 0, nullptr),
                cudaErrorInvalidConfiguration, "a grid of 0 blocks");
  ExpectRefused(cudaLaunchKernel(fill, dim3(1), dim3(1, 0, 1), fill_args, 0, nullptr),
                cudaErrorInvalidConfiguration, "a block of height 0");
  ExpectRefused(cudaLaunchKernel(fill, dim3(1), dim3(1, 1, 65), fill_args, 0, nullptr),
                cudaErrorInvalidConfiguration, "a block of depth 65");
  ExpectRefused(cudaLaunchKernel(fill, dim3(1, 65536), dim3(1), fill_args, 0, nullptr),
                cudaErrorInvalidConfiguration, "a grid of height 65536");
  // The <<<>>> form reports through the last error only.
  Fill<<<1, 1025>>>(out, 1);
  ExpectRefused(cudaPeekAtLastError(), cudaErrorInvalidConfiguration, "<<<1, 1025>>>");

  // More threads than the kernel's __launch_bounds__ allow.
  Bounded<<<1, 256>>>(out);
  ExpectRefused(cudaPeekAtLastError(), cudaErrorLaunchOutOfResources, "256 threads, bounds 128");
  Bounded<<<2, 128>>>(out);
  CHECK_CUDA(cudaGetLastError());

  // Dynamic shared memory: 64 KiB needs the kernel's opt-in; more than the device has never
  // works.
  int optin = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  constexpr int kWords = 16384;  // 64 KiB
  ThroughShared<<<1, 256, kWords * sizeof(int)>>>(out, kWords);
  ExpectRefused(cudaPeekAtLastError(), cudaErrorInvalidValue, "64 KiB without opting in");
  CHECK_CUDA(cudaFuncSetAttribute(ThroughShared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  kWords * sizeof(int)));
  ThroughShared<<<1, 256, kWords * sizeof(int)>>>(out, kWords);
  CHECK_CUDA(cudaGetLastError());
  std::vector<int> host(256);
  CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i) EXPECT(host[i] == (kWords - 1 - i) * 3);
  ThroughShared<<<1, 256, optin + 4>>>(out, kWords);
  ExpectRefused(cudaPeekAtLastError(), cudaErrorInvalidConfiguration,
                "more shared memory than the device has");

  // A valid launch after all that computes, and nothing failed asynchronously.
  Fill<<<4, 256>>>(out, 42);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(host.data(), out + 768, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : host) EXPECT(v == 42);

  // The driver API's launch reports CUDA_ERROR_INVALID_VALUE for the same mistakes, at once.
  CHECK_CU(cuInit(0));
  CUmodule module = nullptr;
  CUfunction add_one = LoadFunction(&module, kAddOnePtx, "add_one");
  unsigned n = 64;
  void* args[] = {&out, &n};
  EXPECT(cuLaunchKernel(add_one, 1, 1, 1, 2048, 1, 1, 0, nullptr, args, nullptr) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuLaunchKernel(add_one, 0, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuLaunchKernel(add_one, 1, 1, 1, 64, 1, 1, 64 * 1024, nullptr, args, nullptr) ==
         CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuLaunchKernel(add_one, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CUDA(cudaMemcpy(host.data(), out, 64 * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) EXPECT(host[i] == 43);
  CHECK_CU(cuModuleUnload(module));
  CHECK_CUDA(cudaFree(out));
  std::printf("launch_errors: every invalid configuration refused at its launch\n");
  return 0;
}
