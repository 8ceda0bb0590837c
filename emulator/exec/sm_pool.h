// The virtual SMs: a pool of worker threads that run the blocks of launches. The launching
// thread takes part too, so a launch always makes progress; blocks of concurrent launches
// (from different streams) share the workers. A cooperative grid runs on the launching thread
// alone, its blocks interleaved round by round, so that blocks waiting for each other at a
// grid-wide barrier all make progress whatever the other launches do.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "emulator/exec/block.h"

namespace tally::emu::exec {

class SmPool {
 public:
  explicit SmPool(uint32_t workers);
  ~SmPool();
  SmPool(const SmPool&) = delete;
  SmPool& operator=(const SmPool&) = delete;

  // Runs every block of `setup`'s grid; the first failing block's error (the others stop).
  absl::Status Run(LaunchSetup& setup);
  // Library teardown: running launches stop at their next time slice (a kernel that never
  // ends must not keep the process from exiting) and later ones do not start.
  void Cancel();
  // Lane-instructions of every block that finished in this process (tallyEmuLaneInstructions).
  static uint64_t LaneInstructions();

 private:
  struct Job;
  void WorkerLoop(uint32_t sm);
  // A cooperative grid: all blocks resident at once, interleaved on the calling thread.
  static absl::Status RunCooperative(LaunchSetup& setup);
  // Runs blocks of `job` until none are left; `sm` is the virtual SM reported in %smid.
  static void Drain(Job& job, uint32_t sm);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
  bool cancelled_ = false;
  std::vector<LaunchSetup*> running_;  // launches inside Run()
  std::vector<std::thread> workers_;
};

}  // namespace tally::emu::exec
