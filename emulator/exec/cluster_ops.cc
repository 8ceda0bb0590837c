// Thread-block clusters inside a block: barrier.cluster, mapa/getctarank, and access to the
// shared memory of the other CTAs of the cluster. The CTAs of a cluster run on one host thread
// (SmPool), so none of this needs host atomics.
//
// barrier.cluster (PTX ISA, "barrier.cluster"): each warp keeps the lanes that arrived in the
// barrier's current phase; the phase completes when every non-exited thread of the cluster
// arrived, which clears the arrivals and releases the lanes that wait for it. A wait by a lane
// that has no arrival in the current phase (its phase completed already) does not block.
#include <bit>
#include <cstdio>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {

bool Block::ExecuteCluster(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  if (in.op == Op::kClusterBarrier) {
    if (in.mod == 0) {  // arrive
      if ((warp.cluster_arrived & mask) != 0) {
        Fault(warp, std::countr_zero(warp.cluster_arrived & mask), pc, CUDA_ERROR_LAUNCH_FAILED,
              "barrier.cluster.arrive twice in one phase of the cluster barrier");
        return false;
      }
      warp.cluster_arrived |= mask;
      cluster_arrivals_ += std::popcount(mask);
      return true;
    }
    const uint32_t waiting = mask & warp.cluster_arrived;
    for (uint32_t m = waiting; m != 0; m &= m - 1) {
      int lane = std::countr_zero(m);
      warp.pc[lane] = pc + 1;
      warp.barrier_of_lane[lane] = kClusterBarrier;
    }
    warp.blocked |= waiting;
    warp.active &= ~waiting;
    cluster_waiting_ += std::popcount(waiting);
    return true;
  }
  // mapa / getctarank: the shared::cluster address (program.h) of `a` in CTA `rank`, or the
  // rank of the CTA whose shared memory `a` addresses.
  const bool generic = in.space != Space::kShared;
  const bool rank_of = in.mod == 1;
  uint64_t* d = TALLY_R(in.dst[0]);
  const uint64_t* a = TALLY_R(in.src[0]);
  const uint64_t* b = rank_of ? nullptr : TALLY_R(in.src[1]);
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint64_t address = a[l];
    if (generic && address - kSharedWindow >= kWindowSize) {
      char text[120];
      std::snprintf(text, sizeof(text), "%s of the generic address 0x%llx outside shared memory",
                    rank_of ? "getctarank" : "mapa", static_cast<unsigned long long>(address));
      Fault(warp, l, pc, CUDA_ERROR_ILLEGAL_ADDRESS, text);
      return false;
    }
    const uint32_t shared = static_cast<uint32_t>(address - (generic ? kSharedWindow : 0));
    const uint32_t tag = shared >> kClusterRankShift;
    const uint32_t rank = rank_of ? (tag == 0 ? cluster_rank_ : tag - 1)
                                  : static_cast<uint32_t>(b[l] & 0xffffffffu);
    if (rank >= cluster_size_) {
      Fault(warp, l, pc, CUDA_ERROR_ILLEGAL_ADDRESS,
            (rank_of ? "getctarank of a shared address of CTA rank "
                     : "mapa to CTA rank ") +
                std::to_string(rank) + " outside the cluster of " + std::to_string(cluster_size_) +
                " CTAs");
      return false;
    }
    if (rank_of) {
      d[l] = rank;
      continue;
    }
    // The executing CTA's own addresses stay plain shared addresses (so they compare equal).
    const uint32_t offset = shared & kClusterOffsetMask;
    const uint32_t mapped = rank == cluster_rank_ ? offset : (rank + 1) << kClusterRankShift | offset;
    d[l] = generic ? kSharedWindow + mapped : mapped;
  }
  return true;
}

bool Block::ReleaseClusterBarrier(Block* const* blocks, uint32_t count) {
  bool arrivals = false;
  for (uint32_t i = 0; i < count; ++i) {
    const Block& block = *blocks[i];
    arrivals |= block.cluster_arrivals_ != 0;
    for (const Warp& warp : block.warps_) {
      if ((warp.live & ~warp.cluster_arrived) != 0) return false;
    }
  }
  if (!arrivals) return false;
  for (uint32_t i = 0; i < count; ++i) {
    Block& block = *blocks[i];
    block.cluster_arrivals_ = 0;
    block.cluster_waiting_ = 0;
    ++block.barrier_releases_;
    for (Warp& warp : block.warps_) {
      warp.cluster_arrived = 0;
      for (uint32_t m = warp.blocked; m != 0; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (warp.barrier_of_lane[lane] == kClusterBarrier) warp.blocked &= ~(1u << lane);
      }
    }
  }
  return true;
}

uint8_t* Block::TranslateClusterShared(uint32_t address, uint32_t size) {
  const uint32_t tag = address >> kClusterRankShift;
  if (tag == 0 || tag > cluster_size_) return nullptr;
  const uint32_t rank = tag - 1;
  Block* target = rank == cluster_rank_ ? this : cluster_peers_ != nullptr ? cluster_peers_[rank]
                                                                          : nullptr;
  const uint32_t offset = address & kClusterOffsetMask;
  if (target == nullptr || offset >= target->shared_.size() ||
      size > target->shared_.size() - offset) {
    return nullptr;
  }
  return target->shared_.data() + offset;
}

}  // namespace tally::emu::exec
