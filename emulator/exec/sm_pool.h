// The device's virtual SMs and their block dispatcher, device-wide as on a GPU. A launch is
// submitted by its stream's thread when the stream reaches it; the thread then only waits. Its
// dispatch units (blocks; all CTAs of a cluster; a cooperative grid as a whole) are dispatched
// in order, each once SMs have room for all of it: launches by priority (lower numbers first),
// launches of one priority in the order they arrived, and nothing passes a unit that waits for
// room. A block keeps its SM's warps, block slot and shared memory (exec/occupancy.h) until it
// finished: running blocks are never preempted. A fixed set of host threads each owns some SMs
// and runs the units resident there interleaved round by round, so that co-resident blocks (of
// any launches) all make progress.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "emulator/exec/block.h"
#include "emulator/exec/occupancy.h"

namespace tally::emu::exec {

class SmPool {
 public:
  // `sm_count` virtual SMs run by `threads` host threads (1 .. sm_count).
  SmPool(uint32_t sm_count, uint32_t threads);
  ~SmPool();
  SmPool(const SmPool&) = delete;
  SmPool& operator=(const SmPool&) = delete;

  // Runs every block of `setup`'s grid and returns once all ran; the first failing block's
  // error (blocks of the launch not yet dispatched are then skipped, running ones stop).
  absl::Status Run(LaunchSetup& setup);
  // Library teardown: running launches stop at their next round (a kernel that never ends must
  // not keep the process from exiting) and later ones do not start.
  void Cancel();

 private:
  struct Launch;
  struct Assignment;
  struct Worker;
  // What an SM has left.
  struct Sm {
    uint32_t warps = kSmMaxWarps;
    uint32_t blocks = kSmMaxBlocks;
    uint64_t shared_bytes = kSmSharedBytes;
    uint32_t Fits(const BlockFootprint& footprint) const;
  };

  void WorkerLoop(Worker& worker);
  // Dispatches units, most urgent launch first, until the next one does not fit.
  void DispatchLocked();
  // Places the next unit of `launch` on SMs with room for all of it; false if there is none.
  bool PlaceLocked(Launch& launch);
  // Records a finished unit (resident on `sms`) and gives its SMs' resources back. The status
  // is moved, not shared: abseil's reference counts are invisible to ThreadSanitizer.
  void FinishLocked(Launch& launch, const std::vector<uint32_t>& sms, absl::Status status);

  const uint32_t thread_count_;
  std::mutex mu_;
  std::vector<Sm> sms_;
  uint32_t next_sm_ = 0;          // where the search for room starts (spreads blocks over SMs)
  std::vector<Launch*> queue_;    // launches with units to dispatch, in dispatch order
  std::vector<Launch*> running_;  // launches inside Run()
  bool stopping_ = false;
  bool cancelled_ = false;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace tally::emu::exec
