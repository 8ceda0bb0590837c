// Blocks that are resident together and run on one host thread, interleaved one round (a time
// slice per warp) at a time: a single block, the CTAs of a thread-block cluster, or a whole
// cooperative grid. Blocks that wait for each other (at a grid-wide or cluster barrier, or
// spinning on each other's stores) all make progress this way, and a unit in which nothing
// happens for many rounds is reported as deadlocked instead of hanging.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/exec/block.h"

namespace tally::emu::exec {

// The Block objects of one host thread. A block keeps the state it prepared for a launch, so
// that the next block of the same launch only resets what differs between blocks.
class BlockCache {
 public:
  // A free block, one last used for launch `launch_id` if there is one.
  Block* Take(uint64_t launch_id);
  void Give(Block* block) { free_.push_back(block); }

 private:
  std::vector<std::unique_ptr<Block>> owned_;
  std::vector<Block*> free_;
};

class ResidentUnit {
 public:
  // Clusters [first_cluster, first_cluster + clusters) of `setup`'s grid (all of it for a
  // cooperative grid, one cluster otherwise), one block from `cache` per CTA; CTA i (by
  // cluster, then rank) is resident on virtual SM sms[i].
  void Start(const LaunchSetup& setup, uint64_t first_cluster, uint64_t clusters,
             std::span<const uint32_t> sms, BlockCache& cache);
  // Lane-instructions one round of the unit's blocks may execute: its share of a host thread's
  // time in each pass over the units resident there.
  uint64_t RoundBudget() const { return threads_ * uint64_t{kTimeSlice}; }
  // Runs the unit and subtracts the lane-instructions it executed from `budget`: a lone block
  // rounds until the budget is spent (blocks that pass barriers often then run many short
  // rounds while their state is in cache), several blocks one round of each, then the cluster
  // barriers. True once every block finished or the launch aborts; the first fault, or a
  // deadlock, is the error.
  absl::StatusOr<bool> Step(uint64_t& budget);
  // Hands the blocks back to `cache` (after the unit finished).
  void Stop(BlockCache& cache);
  const LaunchSetup& setup() const { return *setup_; }
  // The SM of each CTA, whose resources the unit holds until it finished.
  const std::vector<uint32_t>& sms() const { return sms_; }

 private:
  const LaunchSetup* setup_ = nullptr;
  std::vector<Block*> blocks_;  // by cluster, then rank: each cluster's peers in a row
  std::vector<uint32_t> sms_;
  std::vector<uint8_t> done_;  // finished blocks stay: cluster peers may read their shared memory
  uint64_t live_ = 0;
  uint64_t threads_ = 0;
  uint32_t cluster_size_ = 1;
  uint32_t idle_rounds_ = 0;
};

// Lane-instructions of every block run in this process so far (tallyEmuLaneInstructions).
uint64_t LaneInstructions();

}  // namespace tally::emu::exec
