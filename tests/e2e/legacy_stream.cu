// The legacy default stream's implicit synchronisation within one client (CUDA Runtime API,
// "Stream synchronization behavior"): a copy on the default stream waits for a slow kernel on a
// blocking stream, and a kernel on a blocking stream waits for a memset on the default stream,
// without any explicit synchronisation in between.
#include <vector>

#include "check.h"

__global__ void SlowFill(int* data, int n, int value, int spin) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int acc = 0;
  for (int k = 0; k < spin; ++k) acc += k & 1;  // keeps the kernel busy; acc == spin / 2
  if (i < n) data[i] = value + acc - spin / 2;
}

__global__ void AddOne(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

int main() {
  const int n = 256;
  int* device;
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));  // blocking: ordered with the default stream
  std::vector<int> host(n, 0);

  SlowFill<<<2, 128, 0, stream>>>(device, n, 42, 2000);
  CHECK_CUDA(cudaMemcpy(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == 42);

  CHECK_CUDA(cudaMemset(device, 0, n * sizeof(int)));
  AddOne<<<2, 128, 0, stream>>>(device, n);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpyAsync(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == 1);

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(device));
  std::printf("legacy_stream: default-stream work is ordered with blocking streams\n");
  return 0;
}
