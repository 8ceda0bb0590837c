// The virtual SMs: a pool of worker threads that run the blocks of launches. The launching
// thread takes part too, so a launch always makes progress; blocks of concurrent launches
// (from different streams) share the workers. Blocks that must be resident together run on one
// host thread, interleaved round by round, so that blocks waiting for each other all make
// progress whatever the other launches do: a cooperative grid (on the launching thread), and
// the CTAs of each thread-block cluster (a cluster is the unit the workers hand out).
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
  // Clusters [first_cluster, first_cluster + clusters) of `setup`'s grid (all of it for a
  // cooperative grid, one cluster otherwise) resident at once in `blocks` (grown as needed,
  // reused across calls), interleaved on the calling thread; block i runs on virtual SM
  // sm + i. After every round, each cluster's barrier.cluster phase is completed if it can be.
  static absl::Status RunResident(LaunchSetup& setup, uint64_t first_cluster, uint64_t clusters,
                                  uint32_t sm, std::vector<std::unique_ptr<Block>>& blocks);
  // Runs clusters of `job` until none are left; `sm` is the virtual SM reported in %smid.
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
