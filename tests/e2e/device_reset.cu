// cudaDeviceReset destroys what the process owns on the device: after it, the memory (device,
// page-locked, managed), streams and events from before are invalid and the device memory is free
// again; the registered kernel still launches and computes correctly with new memory, streams
// and page-locked blocks, and the module's __device__ and __constant__ variables have their
// initial values again. (A failing kernel is not tried: the emulator's errors are sticky for
// the server's one context, shared by all clients.)
#include <cstdio>
#include <vector>

#include "check.h"

__global__ void Scale(const int* in, int* out, int factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor + i;
}

__device__ int launches = 100;
__constant__ int offset = 3;

__global__ void Count(int* seen) { *seen = atomicAdd(&launches, 1) + offset; }

namespace {

constexpr int kN = 1000;

// Runs Count: the launch counter before it plus the constant offset.
int RunCount() {
  int* seen = nullptr;
  CHECK_CUDA(cudaMalloc(&seen, sizeof(int)));
  Count<<<1, 1>>>(seen);
  CHECK_CUDA(cudaGetLastError());
  int value = 0;
  CHECK_CUDA(cudaMemcpy(&value, seen, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(seen));
  return value;
}

int ReadLaunches() {
  int value = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&value, launches, sizeof(int)));
  return value;
}

void RunScale(const int* in, int* out, int factor, cudaStream_t stream) {
  Scale<<<(kN + 127) / 128, 128, 0, stream>>>(in, out, factor, kN);
  CHECK_CUDA(cudaGetLastError());
}

cudaMemoryType TypeOf(const void* pointer) {
  cudaPointerAttributes attributes{};
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, pointer));
  return attributes.type;
}

}  // namespace

int main() {
  std::vector<int> input(kN), output(kN);
  for (int i = 0; i < kN; ++i) input[i] = i * 3 - 500;

  // The kernel's module is loaded before the baseline, so that it counts in both measurements;
  // its variables change.
  int* warm = nullptr;
  CHECK_CUDA(cudaMalloc(&warm, kN * sizeof(int)));
  RunScale(warm, warm, 1, nullptr);
  CHECK_CUDA(cudaFree(warm));
  EXPECT(RunCount() == 103);
  const int new_offset = 50;
  CHECK_CUDA(cudaMemcpyToSymbol(offset, &new_offset, sizeof(int)));
  EXPECT(RunCount() == 151);
  EXPECT(ReadLaunches() == 102);
  size_t free_before = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_before, &total));

  int* old_in = nullptr;
  int* old_out = nullptr;
  int* old_pinned = nullptr;
  int* old_managed = nullptr;
  CHECK_CUDA(cudaMalloc(&old_in, kN * sizeof(int)));
  // Large enough to show in cudaMemGetInfo on any device: NVIDIA's driver serves small
  // allocations from memory it has already set aside.
  CHECK_CUDA(cudaMalloc(&old_out, 64 << 20));
  CHECK_CUDA(cudaMallocHost(&old_pinned, kN * sizeof(int)));
  CHECK_CUDA(cudaMallocManaged(&old_managed, kN * sizeof(int)));
  cudaStream_t old_stream;
  CHECK_CUDA(cudaStreamCreate(&old_stream));
  cudaEvent_t old_event;
  CHECK_CUDA(cudaEventCreate(&old_event));
  size_t free_allocated = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_allocated, &total));
  EXPECT(free_allocated < free_before);
  // Work still queued when the reset comes.
  CHECK_CUDA(
      cudaMemcpyAsync(old_in, input.data(), kN * sizeof(int), cudaMemcpyHostToDevice, old_stream));
  RunScale(old_in, old_out, 2, old_stream);
  CHECK_CUDA(cudaEventRecord(old_event, old_stream));

  CHECK_CUDA(cudaDeviceReset());
  CHECK_CUDA(cudaDeviceSynchronize());

  // Everything from before is gone.
  EXPECT(cudaMemcpy(output.data(), old_out, kN * sizeof(int), cudaMemcpyDeviceToHost) ==
         cudaErrorInvalidValue);
  EXPECT(cudaFree(old_in) == cudaErrorInvalidValue);
  EXPECT(cudaFreeHost(old_pinned) == cudaErrorInvalidValue);
  EXPECT(TypeOf(old_out) == cudaMemoryTypeUnregistered);
  EXPECT(TypeOf(old_pinned) == cudaMemoryTypeUnregistered);
  EXPECT(TypeOf(old_managed) == cudaMemoryTypeUnregistered);
  EXPECT(cudaStreamSynchronize(old_stream) == cudaErrorInvalidResourceHandle);
  EXPECT(cudaEventQuery(old_event) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  size_t free_after = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_after, &total));
  EXPECT(free_after == free_before);
  EXPECT(ReadLaunches() == 100);
  EXPECT(RunCount() == 103);

  // New work with the same kernel, new memory, a new stream and page-locked memory.
  int* in = nullptr;
  int* out = nullptr;
  int* pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&in, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kN * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&pinned, kN * sizeof(int)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  for (int i = 0; i < kN; ++i) pinned[i] = input[i];
  CHECK_CUDA(cudaMemcpyAsync(in, pinned, kN * sizeof(int), cudaMemcpyHostToDevice, stream));
  RunScale(in, out, 5, stream);
  CHECK_CUDA(cudaMemcpyAsync(pinned, out, kN * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kN; ++i) EXPECT(pinned[i] == input[i] * 5 + i);

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(out));
  // A reset with nothing allocated is harmless.
  CHECK_CUDA(cudaDeviceReset());
  std::printf("device_reset: OK\n");
  return 0;
}
