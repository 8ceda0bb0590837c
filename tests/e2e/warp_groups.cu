// Warp collectives over partial groups: lanes of one warp split into groups by a label
// (match.any.sync, cooperative_groups::labeled_partition), each group reducing, voting and
// matching over its own member mask at the same time. Every lane must get its own group's
// result (PTX ISA, "redux.sync", "vote.sync", "match.sync"), checked against a host reference.
// Built for sm_80: redux.sync needs it.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cstdint>
#include <vector>

#include "check.h"

namespace cg = cooperative_groups;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

struct LaneResult {
  unsigned group_mask;  // __match_any_sync
  int sum;              // __reduce_add_sync
  unsigned min, max;    // __reduce_min_sync / __reduce_max_sync (unsigned)
  int smin;             // __reduce_min_sync (signed)
  unsigned bit_and, bit_or, bit_xor;
  unsigned ballot;  // __ballot_sync
  int all, any;     // __all_sync / __any_sync
  unsigned all_eq;  // __match_all_sync's mask
  int all_eq_pred;  // and its predicate
  int cg_sum;       // cg::reduce over the labeled partition
  int cg_size, cg_rank;
  int cg_leader_value;  // the partition's shfl from its rank 0
};

// Labels that interleave groups across the warp and differ between warps.
__host__ __device__ int LabelOf(int thread) { return (thread * 7 + thread / 32) % 5; }
__host__ __device__ int ValueOf(int thread) { return (thread * 37) % 101 - 50; }

__global__ void Groups(LaneResult* out) {
  const int t = threadIdx.x;
  const int label = LabelOf(t);
  const int value = ValueOf(t);
  const unsigned u = static_cast<unsigned>(value + 1000);
  LaneResult r;
  const unsigned mask = __match_any_sync(0xffffffffu, label);
  r.group_mask = mask;
  r.sum = __reduce_add_sync(mask, value);
  r.min = __reduce_min_sync(mask, u);
  r.max = __reduce_max_sync(mask, u);
  r.smin = __reduce_min_sync(mask, value);
  r.bit_and = __reduce_and_sync(mask, u);
  r.bit_or = __reduce_or_sync(mask, u);
  r.bit_xor = __reduce_xor_sync(mask, u);
  const bool predicate = value > 0;
  r.ballot = __ballot_sync(mask, predicate);
  r.all = __all_sync(mask, predicate);
  r.any = __any_sync(mask, predicate);
  // Within a group every lane holds the same label, so match.all holds: each group's mask.
  r.all_eq = __match_all_sync(mask, label * 3 + (value > 45 ? 1 : 0), &r.all_eq_pred);

  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  cg::coalesced_group group = cg::labeled_partition(warp, label);
  r.cg_sum = cg::reduce(group, value, cg::plus<int>());
  r.cg_size = static_cast<int>(group.size());
  r.cg_rank = static_cast<int>(group.thread_rank());
  r.cg_leader_value = group.shfl(value, 0);
  out[blockIdx.x * kThreads + t] = r;
}

int main() {
  constexpr int kBlocks = 3;
  LaneResult* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, kBlocks * kThreads * sizeof(LaneResult)));
  Groups<<<kBlocks, kThreads>>>(device);
  CHECK_CUDA(cudaGetLastError());
  std::vector<LaneResult> results(kBlocks * kThreads);
  CHECK_CUDA(cudaMemcpy(results.data(), device, results.size() * sizeof(LaneResult),
                        cudaMemcpyDeviceToHost));
  int groups_seen = 0;
  for (int b = 0; b < kBlocks; ++b) {
    for (int t = 0; t < kThreads; ++t) {
      const LaneResult& r = results[b * kThreads + t];
      const int warp_base = t / 32 * 32;
      unsigned mask = 0;
      int sum = 0, smin = INT32_MAX, rank = 0, leader = 0;
      unsigned min = UINT32_MAX, max = 0, all_and = ~0u, all_or = 0, all_xor = 0, ballot = 0;
      bool equal = true;
      const int first_key = -1;
      int key = first_key;
      for (int lane = 0; lane < 32; ++lane) {
        const int other = warp_base + lane;
        if (LabelOf(other) != LabelOf(t)) continue;
        if (mask == 0) leader = ValueOf(other);
        if (other < t) ++rank;
        mask |= 1u << lane;
        const int v = ValueOf(other);
        const unsigned u = static_cast<unsigned>(v + 1000);
        sum += v;
        smin = v < smin ? v : smin;
        min = u < min ? u : min;
        max = u > max ? u : max;
        all_and &= u;
        all_or |= u;
        all_xor ^= u;
        if (v > 0) ballot |= 1u << lane;
        const int this_key = LabelOf(other) * 3 + (v > 45 ? 1 : 0);
        if (key == first_key) key = this_key;
        equal = equal && this_key == key;
      }
      if (r.group_mask != mask || r.sum != sum || r.min != min || r.max != max || r.smin != smin ||
          r.bit_and != all_and || r.bit_or != all_or || r.bit_xor != all_xor ||
          r.ballot != ballot || r.all != (ballot == mask) || r.any != (ballot != 0) ||
          r.all_eq != (equal ? mask : 0u) || r.all_eq_pred != equal || r.cg_sum != sum ||
          r.cg_size != __builtin_popcount(mask) || r.cg_rank != rank ||
          r.cg_leader_value != leader) {
        std::fprintf(stderr,
                     "block %d thread %d: mask %08x (expected %08x) sum %d (%d) min %u (%u) "
                     "max %u (%u) smin %d (%d) ballot %08x (%08x) all_eq %08x/%d cg sum %d size "
                     "%d rank %d (%d) leader %d (%d)\n",
                     b, t, r.group_mask, mask, r.sum, sum, r.min, min, r.max, max, r.smin, smin,
                     r.ballot, ballot, r.all_eq, r.all_eq_pred, r.cg_sum, r.cg_size, r.cg_rank,
                     rank, r.cg_leader_value, leader);
        return 1;
      }
      if (rank == 0) ++groups_seen;
    }
  }
  EXPECT(groups_seen == kBlocks * kWarps * 5);  // every warp has all five labels
  CHECK_CUDA(cudaFree(device));
  std::printf("warp_groups: %d groups in %d warps, each lane got its own group's results\n",
              groups_seen, kBlocks * kWarps);
  return 0;
}
