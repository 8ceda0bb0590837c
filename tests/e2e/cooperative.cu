// Cooperative launches (cudaLaunchCooperativeKernel and cudaLaunchKernelExC with the
// cooperative attribute) with a grid-wide barrier between two phases, the too-large error,
// launch attributes Tally ignores, refuses or does not know, and context limits.
#include <cooperative_groups.h>

#include <vector>

#include "check.h"

namespace cg = cooperative_groups;

// Phase 1 writes every element, phase 2 reads one another block wrote: only correct when the
// grid-wide barrier holds every block until all have written.
__global__ void RotateAcrossBlocks(int* a, int* b, int n, int salt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = i * 3 + salt;
  cg::this_grid().sync();
  if (i < n) b[i] = a[(i + blockDim.x) % n];
}

__global__ void Fill(int* a, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = value;
}

void Check(const int* device, int n, int salt, int stride) {
  std::vector<int> host(n);
  CHECK_CUDA(cudaMemcpy(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == ((i + stride) % n) * 3 + salt);
}

int main() {
  int cooperative = 0, sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  EXPECT(cooperative == 1);
  int per_sm = 0;
  const int threads = 64;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, RotateAcrossBlocks, threads, 0));
  EXPECT(per_sm > 0);
  const int blocks = 4;  // resident at once on any device that runs this
  const int n = blocks * threads;
  int *a, *b;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(int)));

  // cudaLaunchCooperativeKernel.
  int salt = 7;
  void* args[] = {&a, &b, const_cast<int*>(&n), &salt};
  CHECK_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(RotateAcrossBlocks),
                                         dim3(blocks), dim3(threads), args, 0, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  Check(b, n, 7, threads);

  // cudaLaunchKernelEx with the cooperative attribute, and hints that are ignored.
  cudaLaunchAttribute attributes[3] = {};
  attributes[0].id = cudaLaunchAttributeCooperative;
  attributes[0].val.cooperative = 1;
  attributes[1].id = cudaLaunchAttributePriority;
  attributes[1].val.priority = 0;
  attributes[2].id = cudaLaunchAttributeIgnore;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.attrs = attributes;
  config.numAttrs = 3;
  CHECK_CUDA(cudaLaunchKernelEx(&config, RotateAcrossBlocks, a, b, n, 11));
  CHECK_CUDA(cudaDeviceSynchronize());
  Check(b, n, 11, threads);

  // Too many blocks to be resident at once: refused at the call, nothing runs.
  const unsigned too_many = static_cast<unsigned>(per_sm * sms + 1);
  salt = 13;
  EXPECT(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(RotateAcrossBlocks),
                                     dim3(too_many), dim3(threads), args, 0,
                                     nullptr) == cudaErrorCooperativeLaunchTooLarge);
  EXPECT(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge);
  config.gridDim = dim3(too_many);
  EXPECT(cudaLaunchKernelEx(&config, RotateAcrossBlocks, a, b, n, 13) ==
         cudaErrorCooperativeLaunchTooLarge);
  EXPECT(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge);
  CHECK_CUDA(cudaDeviceSynchronize());
  Check(b, n, 11, threads);  // unchanged

  // Attributes Tally cannot honour, and ids it does not know.
  config.gridDim = dim3(blocks);
  attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[0].val.programmaticStreamSerializationAllowed = 1;
  config.numAttrs = 1;
  EXPECT(cudaLaunchKernelEx(&config, Fill, a, n, 1) == cudaErrorNotSupported);
  attributes[0].id = static_cast<cudaLaunchAttributeID>(999);
  EXPECT(cudaLaunchKernelEx(&config, Fill, a, n, 1) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  // No attributes: a plain launch.
  config.numAttrs = 0;
  CHECK_CUDA(cudaLaunchKernelEx(&config, Fill, a, n, 5));
  std::vector<int> host(n);
  CHECK_CUDA(cudaMemcpy(host.data(), a, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == 5);

  // Limits: each reads back what it set; an unknown limit is refused.
  size_t value = 0;
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK_CUDA(cudaDeviceGetLimit(&value, cudaLimitStackSize));
  EXPECT(value == 4096);
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitMallocHeapSize, size_t{16} << 20));
  CHECK_CUDA(cudaDeviceGetLimit(&value, cudaLimitMallocHeapSize));
  EXPECT(value == size_t{16} << 20);
  EXPECT(cudaDeviceGetLimit(&value, static_cast<cudaLimit>(99)) != cudaSuccess);
  EXPECT(cudaDeviceSetLimit(static_cast<cudaLimit>(99), 1) != cudaSuccess);
  cudaGetLastError();

  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  std::printf("cooperative: grid-synchronised launches, limits and launch attributes correct\n");
  return 0;
}
