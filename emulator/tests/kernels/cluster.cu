// Thread-block cluster launches (compute_90): shapes given at launch time
// (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) or at compile time (__cluster_dims__), a mapa to a
// rank outside the cluster, and a cluster that can never finish.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Per block: its rank, the cluster size, the cluster's x index, %is_explicit_cluster, and the
// value the next rank of the cluster holds in shared memory (its block index * 10).
extern "C" __global__ void cluster_ranks(unsigned* out) {
  __shared__ unsigned mine;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = blockIdx.x * 10;
  cluster.sync();
  unsigned rank = cluster.block_rank(), size = cluster.num_blocks();
  unsigned next = *cluster.map_shared_rank(&mine, (rank + 1) % size);
  unsigned is_explicit, cluster_x;
  asm("{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(is_explicit));
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cluster_x));
  cluster.sync();
  if (threadIdx.x == 0) {
    unsigned* o = out + blockIdx.x * 5;
    o[0] = rank;
    o[1] = size;
    o[2] = cluster_x;
    o[3] = is_explicit;
    o[4] = next;
  }
}

// Compile-time clusters of two.
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_pairs(unsigned* out) {
  out[blockIdx.x] = cg::this_cluster().block_rank();
}

// mapa of a shared variable to CTA `rank` (outside the cluster when rank >= its size).
extern "C" __global__ void mapa_rank(unsigned rank, int* out) {
  __shared__ int value;
  value = 7;
  cg::this_cluster().sync();
  out[blockIdx.x] = *cg::this_cluster().map_shared_rank(&value, rank);
  cg::this_cluster().sync();
}

// Rank 1 waits for a shared flag that nobody sets: the cluster never finishes.
extern "C" __global__ void cluster_spin(int* out) {
  __shared__ volatile int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (cg::this_cluster().block_rank() == 1) {
    while (flag == 0) {
    }
  }
  out[blockIdx.x] = 1;
}
