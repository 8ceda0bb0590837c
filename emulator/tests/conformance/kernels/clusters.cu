// Conformance kernels: thread-block clusters (sm_90): the cluster special registers,
// barrier.cluster (cooperative groups' cluster.sync() and split arrive/wait), and distributed
// shared memory: reads, writes and atomics on other CTAs' shared memory through generic
// pointers (map_shared_rank) and through mapa with ld/st/atom/red.shared::cluster, getctarank
// and isspacep. Cluster shapes come from __cluster_dims__ (.reqnctapercluster). Older targets
// compile empty bodies: the suite runs the sm_90 modules. References in ../clusters_cases.cc.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CLUSTER_DIMS(x, y, z) __cluster_dims__(x, y, z)
#define HAVE_CLUSTERS 1
#else
#define CLUSTER_DIMS(x, y, z)
#define HAVE_CLUSTERS 0
#endif

#define READ_SREG(value, reg) asm volatile("mov.u32 %0, %%" reg ";" : "=r"(value))

// Every cluster special register, per block (16 values), in 2x2x1 clusters of a 3-D grid.
extern "C" __global__ void CLUSTER_DIMS(2, 2, 1) cluster_registers(unsigned* out) {
#if HAVE_CLUSTERS
  unsigned v[16];
  READ_SREG(v[0], "cluster_ctaid.x");
  READ_SREG(v[1], "cluster_ctaid.y");
  READ_SREG(v[2], "cluster_ctaid.z");
  READ_SREG(v[3], "cluster_nctaid.x");
  READ_SREG(v[4], "cluster_nctaid.y");
  READ_SREG(v[5], "cluster_nctaid.z");
  READ_SREG(v[6], "clusterid.x");
  READ_SREG(v[7], "clusterid.y");
  READ_SREG(v[8], "clusterid.z");
  READ_SREG(v[9], "nclusterid.x");
  READ_SREG(v[10], "nclusterid.y");
  READ_SREG(v[11], "nclusterid.z");
  READ_SREG(v[12], "cluster_ctarank");
  READ_SREG(v[13], "cluster_nctarank");
  asm volatile(
      "{\n\t.reg .pred p;\n\tmov.pred p, %%is_explicit_cluster;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(v[14]));
  v[15] = cg::this_cluster().block_rank();  // the cooperative-groups view of the rank
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * threadIdx.y;
  if (thread < 16) out[block * 16 + thread] = v[thread];
#endif
}

// Distributed shared memory through generic pointers, in clusters of 4 CTAs of 64 threads:
// each thread reads the next rank's values, writes into the previous rank's inbox, and adds to
// a counter in rank 0's shared memory; cluster.sync() orders the phases.
extern "C" __global__ void CLUSTER_DIMS(4, 1, 1) cluster_dsmem(const int* in, int* out,
                                                               unsigned* counters) {
#if HAVE_CLUSTERS
  __shared__ int values[64];
  __shared__ int inbox[64];
  __shared__ unsigned counter;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank(), size = cluster.num_blocks(), t = threadIdx.x;
  values[t] = in[blockIdx.x * 64 + t];
  if (t == 0) counter = 0;
  cluster.sync();
  int read = cluster.map_shared_rank(values, (rank + 1) % size)[63 - t];
  cluster.map_shared_rank(inbox, (rank + size - 1) % size)[t] = read * 2 + static_cast<int>(rank);
  atomicAdd(cluster.map_shared_rank(&counter, 0), t + 1);
  cluster.sync();
  out[blockIdx.x * 64 + t] = inbox[t];
  if (t == 0) counters[blockIdx.x] = counter;
#endif
}

// The explicit forms, in clusters of 3 CTAs of 32 threads: split barrier.cluster.arrive/wait
// with work in between, mapa.shared::cluster, ld/st/atom.cas/red on .shared::cluster
// addresses, getctarank, generic mapa and isspacep.shared::cluster / ::cta.
extern "C" __global__ void CLUSTER_DIMS(3, 1, 1) cluster_explicit_forms(int* out) {
#if HAVE_CLUSTERS
  __shared__ int cell[32];
  __shared__ int slot[32];
  __shared__ int own[32];
  __shared__ int total;
  const unsigned t = threadIdx.x;
  unsigned rank, size;
  READ_SREG(rank, "cluster_ctarank");
  READ_SREG(size, "cluster_nctarank");
  cell[t] = static_cast<int>(rank * 100 + t);
  slot[t] = -1;
  if (t == 0) total = 0;
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  own[t] = static_cast<int>(t * 3);  // between arrive and wait: the CTA's own memory only
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  const unsigned peer = (rank + 1) % size;
  unsigned cell_address, slot_address, total_address;
  asm("mapa.shared::cluster.u32 %0, %1, %2;"
      : "=r"(cell_address)
      : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&cell[t]))), "r"(peer));
  asm("mapa.shared::cluster.u32 %0, %1, %2;"
      : "=r"(slot_address)
      : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&slot[t]))), "r"(peer));
  asm("mapa.shared::cluster.u32 %0, %1, 0;"
      : "=r"(total_address)
      : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&total))));
  int value, old;
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(value) : "r"(cell_address) : "memory");
  asm volatile("atom.shared::cluster.cas.b32 %0, [%1], -1, %2;"
               : "=r"(old)
               : "r"(slot_address), "r"(value + 1000)
               : "memory");
  asm volatile("red.shared::cluster.add.u32 [%0], %1;" ::"r"(total_address), "r"(value)
               : "memory");
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(cell_address), "r"(value + own[t])
               : "memory");
  unsigned owner, in_cluster, in_cta, own_in_cta;
  asm("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(cell_address));
  unsigned long long generic_remote;
  asm("mapa.u64 %0, %1, %2;" : "=l"(generic_remote) : "l"(&cell[t]), "r"(peer));
  asm("{\n\t.reg .pred p;\n\tisspacep.shared::cluster p, %1;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(in_cluster)
      : "l"(generic_remote));
  asm("{\n\t.reg .pred p;\n\tisspacep.shared::cta p, %1;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(in_cta)
      : "l"(generic_remote));
  asm("{\n\t.reg .pred p;\n\tisspacep.shared::cta p, %1;\n\tselp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(own_in_cta)
      : "l"(&cell[t]));
  asm volatile("barrier.cluster.arrive;" ::: "memory");
  asm volatile("barrier.cluster.wait;" ::: "memory");
  int* o = out + (blockIdx.x * 32 + t) * 8;
  o[0] = value;
  o[1] = old;
  o[2] = slot[t];
  o[3] = cell[t];
  o[4] = static_cast<int>(owner);
  o[5] = static_cast<int>(in_cluster | in_cta << 1 | own_in_cta << 2);
  o[6] = *reinterpret_cast<const int*>(generic_remote);
  o[7] = t == 0 ? total : 0;
  // The peers read this CTA's memory above: stay until they are done.
  asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
#endif
}
