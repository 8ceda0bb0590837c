// Several host threads, each with its own stream and buffers, launching and copying at once:
// the shim must keep every thread's calls and responses apart.
#include <thread>
#include <vector>

#include "check.h"

__global__ void Scale(int* data, int n, int factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

void Work(int id, bool* ok) {
  const int n = 500;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i + id;
  cudaStream_t stream;
  int* device;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  for (int round = 0; round < 5; ++round) {
    CHECK_CUDA(
        cudaMemcpyAsync(device, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));
    Scale<<<(n + 127) / 128, 128, 0, stream>>>(device, n, id + 2);
    CHECK_CUDA(
        cudaMemcpyAsync(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  int factor = 1;
  for (int round = 0; round < 5; ++round) factor *= id + 2;
  *ok = true;
  for (int i = 0; i < n; ++i) *ok = *ok && host[i] == (i + id) * factor;
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

int main() {
  constexpr int kThreads = 4;
  bool ok[kThreads] = {};
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) threads.emplace_back(Work, id, &ok[id]);
  for (std::thread& thread : threads) thread.join();
  for (int id = 0; id < kThreads; ++id) EXPECT(ok[id]);
  std::printf("threads: %d threads computed correct results\n", kThreads);
  return 0;
}
