// Corpus: architecture-specific features: cp.async and mbarrier (sm_80+) and thread-block
// clusters with distributed shared memory (sm_90+). Older targets get a plain fallback with
// the same result, so one source serves every arch of the corpus.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Copies 4 bytes per thread global -> shared asynchronously, then doubles them.
__global__ void AsyncCopy(const int* in, int* out) {
  __shared__ int staged[256];
  int t = threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&staged[t]));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(in + blockIdx.x * 256 + t)
               : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#else
  staged[t] = in[blockIdx.x * 256 + t];
#endif
  __syncthreads();
  out[blockIdx.x * 256 + t] = staged[255 - t] * 2;
}

// One mbarrier per block: every thread arrives, then waits on the phase.
__global__ void MbarrierPhase(int* out) {
  __shared__ int values[128];
  values[threadIdx.x] = threadIdx.x + 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ unsigned long long barrier;
  unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0)
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(blockDim.x));
  __syncthreads();
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
  asm volatile(
      "{\n\t"
      ".reg .pred complete;\n"
      "WAIT:\n\t"
      "mbarrier.test_wait.shared.b64 complete, [%0], %1;\n\t"
      "@!complete bra WAIT;\n\t"
      "}" ::"r"(bar),
      "l"(state)
      : "memory");
#else
  __syncthreads();
#endif
  out[blockIdx.x * blockDim.x + threadIdx.x] = values[blockDim.x - 1 - threadIdx.x];
}

// Clusters of two blocks: each block reads its partner's shared memory.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TALLY_CLUSTER_DIMS __cluster_dims__(2, 1, 1)
#else
#define TALLY_CLUSTER_DIMS
#endif
__global__ void TALLY_CLUSTER_DIMS ClusterExchange(int* out) {
  __shared__ int mine;
  if (threadIdx.x == 0) mine = blockIdx.x * 10;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  int* partner = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
  int value = *partner;
  cluster.sync();
#else
  // Without clusters the partner's value is derived: block b holds b * 10.
  __syncthreads();
  int value = mine + ((blockIdx.x & 1) ? -10 : 10);
#endif
  if (threadIdx.x == 0) out[blockIdx.x] = value;
}
