// Thread-block clusters through the shim (compute capability 9.0; the e2e test runs the server's
// emulated GPU as one, TALLY_EMU_CC=90): a kernel compiled with __cluster_dims__ and launched
// with <<<>>> runs its blocks in pairs that synchronise (cluster.sync) and read each other's
// shared memory (distributed shared memory); each block gets its partner's value.
#include <cooperative_groups.h>

#include "check.h"

namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) ReadPartner(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = 100 + static_cast<int>(blockIdx.x);
  cluster.sync();
  const int* partner = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
  if (threadIdx.x == 0) out[blockIdx.x] = *partner;
  cluster.sync();  // the partner's shared memory stays alive until both have read
}

int main() {
  int major = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  EXPECT(major >= 9);
  constexpr int kBlocks = 8;
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kBlocks * sizeof(int)));
  ReadPartner<<<kBlocks, 64>>>(out);
  CHECK_CUDA(cudaGetLastError());
  int host[kBlocks] = {};
  CHECK_CUDA(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
  for (int block = 0; block < kBlocks; ++block) EXPECT(host[block] == 100 + (block ^ 1));
  CHECK_CUDA(cudaFree(out));
  std::printf("clusters: %d blocks in pairs read each other's shared memory\n", kBlocks);
  return 0;
}
