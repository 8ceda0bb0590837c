// Kernels whose blocks record when and where they ran, for the tests of device-wide block
// dispatch (dispatch_test.cc) and of stream memory operations (stream_memop_test.cc).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// What each block records: %globaltimer when it began and when it finished, and its %smid.
struct Stamp {
  unsigned long long start, end;
  unsigned sm, unused;
};

__device__ unsigned long long Now() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__device__ unsigned SmId() {
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}

__device__ void Record(Stamp* stamps, unsigned long long start) {
  Stamp& stamp = stamps[blockIdx.x];
  stamp.start = start;
  stamp.sm = SmId();
  stamp.end = Now();
}

// Each block counts itself in `started` and stays resident for `ns` nanoseconds.
extern "C" __global__ void timed(Stamp* stamps, unsigned long long ns, unsigned* started) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) {
    start = Now();
    atomicAdd(started, 1);
  }
  __syncthreads();
  while (Now() - start < ns) {
  }
  __syncthreads();
  if (threadIdx.x == 0) Record(stamps, start);
}

// Blocks (of any launches) meet: each counts itself in `arrived` and waits until `expected`
// blocks did, so that all were resident at once; after `timeout_ns` it gives up and sets
// `timed_out` instead of hanging.
extern "C" __global__ void meet(Stamp* stamps, unsigned* arrived, unsigned expected,
                                unsigned long long timeout_ns, unsigned* timed_out) {
  if (threadIdx.x != 0) return;
  const unsigned long long start = Now();
  atomicAdd(arrived, 1);
  while (*static_cast<volatile unsigned*>(arrived) < expected) {
    if (Now() - start > timeout_ns) {
      atomicExch(timed_out, 1);
      break;
    }
  }
  Record(stamps, start);
}

// A cooperative grid: every block adds blockIdx.x + 1 to `sum` and reads the total after
// grid.sync(), complete only if every block had arrived.
extern "C" __global__ void grid_sum(Stamp* stamps, unsigned* sum, unsigned* totals) {
  const unsigned long long start = Now();
  if (threadIdx.x == 0) atomicAdd(sum, blockIdx.x + 1);
  cg::this_grid().sync();
  if (threadIdx.x == 0) {
    totals[blockIdx.x] = *static_cast<volatile unsigned*>(sum);
    Record(stamps, start);
  }
}

// Clusters of 4 CTAs: each CTA publishes a value in its shared memory and reads its next
// peer's through distributed shared memory.
extern "C" __global__ void __cluster_dims__(4, 1, 1) cluster_ring(Stamp* stamps, unsigned* seen) {
  __shared__ unsigned mine;
  const unsigned long long start = Now();
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) mine = 1000 * blockIdx.x + cluster.block_rank();
  cluster.sync();
  if (threadIdx.x == 0) {
    seen[blockIdx.x] = *cluster.map_shared_rank(&mine, (cluster.block_rank() + 1) % 4);
    Record(stamps, start);
  }
  cluster.sync();  // the peer's shared memory stays until it was read
}

// Persistent blocks poll a flag that the host raises (ld.volatile); each counts itself in
// `started` first.
extern "C" __global__ void poll_flag(const volatile unsigned* flag, unsigned* started) {
  if (threadIdx.x == 0) atomicAdd(started, 1);
  while (*flag == 0) {
  }
}
