// Managed memory written by host code and kernels in turn at the same address, memsets and
// copies with it, and cudaFree of it.
#include <cstdint>

#include "check.h"

__global__ void Step(int* data, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 2 + round;
}

// A linked structure in managed memory: the kernel follows host-written pointers.
struct Node {
  Node* next;
  int value;
};

__global__ void SumList(const Node* head, long long* sum) {
  long long total = 0;
  for (const Node* node = head; node != nullptr; node = node->next) total += node->value;
  *sum = total;
}

int main() {
  const int n = 777;
  int* data = nullptr;
  CHECK_CUDA(cudaMallocManaged(&data, n * sizeof(int)));
  for (int i = 0; i < n; ++i) data[i] = i;
  // Hints are accepted for managed ranges (the memory never moves) and refused for others.
  cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0};
  CHECK_CUDA(cudaMemPrefetchAsync(data, n * sizeof(int), gpu, 0, 0));
  CHECK_CUDA(cudaMemAdvise(data + 1, sizeof(int), cudaMemAdviseSetReadMostly, gpu));
  CHECK_CUDA(cudaStreamAttachMemAsync(0, data, 0, cudaMemAttachGlobal));
  int on_stack[2];
  EXPECT(cudaMemPrefetchAsync(on_stack, sizeof on_stack, gpu, 0, 0) == cudaErrorInvalidValue);
  EXPECT(cudaMemPrefetchAsync(data, n * sizeof(int) + 1, gpu, 0, 0) == cudaErrorInvalidValue);
  cudaGetLastError();
  int expected[n];
  for (int i = 0; i < n; ++i) expected[i] = i;
  for (int round = 1; round <= 3; ++round) {
    Step<<<(n + 255) / 256, 256>>>(data, n, round);
    CHECK_CUDA(cudaDeviceSynchronize());
    for (int i = 0; i < n; ++i) {
      expected[i] = expected[i] * 2 + round;
      EXPECT(data[i] == expected[i]);
      data[i] -= 1;  // the host's turn
      expected[i] -= 1;
    }
  }

  // Pointers stored by the host, followed by a kernel.
  Node* nodes = nullptr;
  long long* sum = nullptr;
  CHECK_CUDA(cudaMallocManaged(&nodes, 10 * sizeof(Node)));
  CHECK_CUDA(cudaMallocManaged(&sum, sizeof(long long), cudaMemAttachHost));
  for (int i = 0; i < 10; ++i) nodes[i] = {i + 1 < 10 ? &nodes[i + 1] : nullptr, (i + 1) * 100};
  *sum = -1;
  SumList<<<1, 1>>>(nodes, sum);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(*sum == 5500);

  // Memset and copies: managed memory is device memory for the runtime too.
  CHECK_CUDA(cudaMemset(data + 10, 0x01, 4 * sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(data[9] == expected[9] && data[10] == 0x01010101 && data[13] == 0x01010101 &&
         data[14] == expected[14]);
  int* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(device, data, n * sizeof(int), cudaMemcpyDefault));
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = 5 * i;
  CHECK_CUDA(cudaMemcpy(data, host, n * sizeof(int), cudaMemcpyHostToDevice));
  for (int i = 0; i < n; ++i) EXPECT(data[i] == 5 * i);
  CHECK_CUDA(cudaMemcpy(data, device, n * sizeof(int), cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(data[0] == expected[0] && data[10] == 0x01010101 && data[n - 1] == expected[n - 1]);
  CHECK_CUDA(cudaMemcpy(host, data + 1, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(host[0] == expected[1]);

  void* ignored = nullptr;
  EXPECT(cudaMallocManaged(&ignored, 0) == cudaErrorInvalidValue);
  EXPECT(cudaMallocManaged(&ignored, 64, 0x7) == cudaErrorInvalidValue);
  EXPECT(cudaFreeHost(data) == cudaErrorInvalidValue);  // managed memory goes with cudaFree
  cudaGetLastError();
  CHECK_CUDA(cudaFree(data));
  CHECK_CUDA(cudaFree(nodes));
  CHECK_CUDA(cudaFree(sum));
  CHECK_CUDA(cudaFree(device));
  std::printf("managed: host and kernels take turns on managed memory\n");
  return 0;
}
