// Running resident blocks round by round: block reuse, cluster barriers between rounds, and the
// deadlock detection of blocks that wait for each other.
#include "emulator/exec/resident_unit.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "emulator/internal/cuda_status.h"

namespace tally::emu::exec {
namespace {

// Rounds in a row in which no block of a unit of several (cooperative grid, cluster) stored,
// exited or passed a barrier before the unit is reported as deadlocked (each round gives every
// warp a time slice of 4096 instructions, so this is about 4 million instructions of pure
// spinning per warp).
constexpr uint32_t kMaxIdleRounds = 1024;

std::atomic<uint64_t> g_lane_instructions{0};

Dim3 BlockIndex(uint64_t index, const Dim3& grid) {
  return {static_cast<uint32_t>(index % grid.x), static_cast<uint32_t>(index / grid.x % grid.y),
          static_cast<uint32_t>(index / (uint64_t{grid.x} * grid.y))};
}

// Block `rank` of cluster `cluster`: clusters are numbered x first over the grid of clusters,
// ranks x first within one (%cluster_ctarank). With 1x1x1 clusters: block `cluster`.
Dim3 BlockOf(uint64_t cluster, uint32_t rank, const LaunchSetup& setup) {
  const Dim3& shape = setup.cluster;
  const Dim3 id =
      BlockIndex(cluster, {setup.grid.x / shape.x, setup.grid.y / shape.y, setup.grid.z / shape.z});
  const Dim3 in = BlockIndex(rank, shape);
  return {id.x * shape.x + in.x, id.y * shape.y + in.y, id.z * shape.z + in.z};
}

}  // namespace

uint64_t LaneInstructions() { return g_lane_instructions.load(std::memory_order_relaxed); }

Block* BlockCache::Take(uint64_t launch_id) {
  if (free_.empty()) {
    owned_.push_back(std::make_unique<Block>());
    return owned_.back().get();
  }
  size_t pick = free_.size() - 1;  // the block freed last, unless one knows this launch
  for (size_t i = free_.size(); i-- > 0;) {
    if (free_[i]->prepared_launch() == launch_id) {
      pick = i;
      break;
    }
  }
  Block* block = free_[pick];
  free_[pick] = free_.back();
  free_.pop_back();
  return block;
}

void ResidentUnit::Start(const LaunchSetup& setup, uint64_t first_cluster, uint64_t clusters,
                         std::span<const uint32_t> sms, BlockCache& cache) {
  setup_ = &setup;
  cluster_size_ = static_cast<uint32_t>(setup.cluster.Count());
  const uint64_t total = clusters * cluster_size_;
  sms_.assign(sms.begin(), sms.end());
  blocks_.clear();
  for (uint64_t index = 0; index < total; ++index) {
    Block* block = cache.Take(setup.launch_id);
    block->Reset(setup,
                 BlockOf(first_cluster + index / cluster_size_,
                         static_cast<uint32_t>(index % cluster_size_), setup),
                 sms_[index]);
    blocks_.push_back(block);
  }
  if (cluster_size_ > 1) {
    for (uint64_t index = 0; index < total; ++index) {
      blocks_[index]->JoinCluster(&blocks_[index - index % cluster_size_]);
    }
  }
  done_.assign(total, 0);
  live_ = total;
  threads_ = total * setup.block.Count();
  idle_rounds_ = 0;
}

void ResidentUnit::Stop(BlockCache& cache) {
  for (Block* block : blocks_) cache.Give(block);
  blocks_.clear();
}

absl::StatusOr<bool> ResidentUnit::Step(uint64_t& budget) {
  if (blocks_.size() == 1 && !setup_->cooperative) {  // a lone block detects its own deadlocks
    Block& block = *blocks_[0];
    while (true) {
      absl::StatusOr<bool> finished = block.RunRound();
      const uint64_t used = block.TakeLaneInstructions();
      g_lane_instructions.fetch_add(used, std::memory_order_relaxed);
      budget -= std::min(budget, std::max<uint64_t>(used, 1));
      if (!finished.ok() || *finished || budget == 0) return finished;
    }
  }
  budget = 0;
  uint64_t before = 0, after = 0;
  for (const Block* block : blocks_) before += block->progress();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (done_[i]) continue;
    absl::StatusOr<bool> finished = blocks_[i]->RunRound();
    g_lane_instructions.fetch_add(blocks_[i]->TakeLaneInstructions(), std::memory_order_relaxed);
    if (!finished.ok()) return finished.status();
    if (*finished) {
      done_[i] = 1;
      --live_;
    }
  }
  if (cluster_size_ > 1) {
    for (size_t c = 0; c < blocks_.size(); c += cluster_size_) {
      Block::ReleaseClusterBarrier(&blocks_[c], cluster_size_);
    }
  }
  if (live_ == 0 || setup_->abort.load(std::memory_order_relaxed)) return true;
  for (const Block* block : blocks_) after += block->progress();
  idle_rounds_ = after == before ? idle_rounds_ + 1 : 0;
  if (idle_rounds_ > kMaxIdleRounds) {
    return CudaError(
        CUDA_ERROR_LAUNCH_FAILED,
        fmt::format("kernel {}: {} deadlocked: {} of {} blocks keep spinning without "
                    "storing, exiting or passing a barrier",
                    setup_->function->name, setup_->cooperative ? "cooperative grid" : "cluster",
                    live_, blocks_.size()));
  }
  return false;
}

}  // namespace tally::emu::exec
