// Block distribution over the virtual SMs and failure propagation within a launch.
#include "emulator/exec/sm_pool.h"

#include <fmt/format.h>

#include <atomic>
#include <memory>

#include "common/log.h"
#include "common/status.h"
#include "emulator/internal/cuda_status.h"

namespace tally::emu::exec {
namespace {

// Rounds in a row in which no block of a cooperative grid stored, exited or passed a barrier
// before the grid is reported as deadlocked (each round gives every warp a time slice of 4096
// instructions, so this is about 4 million instructions of pure spinning per warp).
constexpr uint32_t kMaxIdleRounds = 1024;

Dim3 BlockIndex(uint64_t index, const Dim3& grid) {
  return {static_cast<uint32_t>(index % grid.x), static_cast<uint32_t>(index / grid.x % grid.y),
          static_cast<uint32_t>(index / (uint64_t{grid.x} * grid.y))};
}

std::atomic<uint64_t> g_lane_instructions{0};  // of every block run in this process

}  // namespace

uint64_t SmPool::LaneInstructions() { return g_lane_instructions.load(std::memory_order_relaxed); }

struct SmPool::Job {
  LaunchSetup* setup = nullptr;
  uint64_t total = 0;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  uint64_t finished = 0;  // blocks run or skipped
  absl::Status error;
};

SmPool::SmPool(uint32_t workers) {
  for (uint32_t i = 0; i < workers; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
}

SmPool::~SmPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void SmPool::Drain(Job& job, uint32_t sm) {
  thread_local Block block;  // reused across blocks: its buffers only grow
  const LaunchSetup& setup = *job.setup;
  const Dim3& grid = setup.grid;
  while (true) {
    uint64_t index = job.next.fetch_add(1, std::memory_order_relaxed);
    if (index >= job.total) return;
    absl::Status status;
    if (!setup.abort.load(std::memory_order_relaxed)) {
      block.Reset(setup, BlockIndex(index, grid), sm);
      status = block.Run();
      g_lane_instructions.fetch_add(block.TakeLaneInstructions(), std::memory_order_relaxed);
    }
    std::lock_guard lock(job.mu);
    if (!status.ok() && job.error.ok()) {
      job.error = status;
      job.setup->abort.store(true, std::memory_order_relaxed);
    }
    if (++job.finished == job.total) job.cv.notify_all();
  }
}

void SmPool::WorkerLoop(uint32_t sm) {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = jobs_.front();
      // A job whose blocks are all taken leaves the queue; its runners finish it.
      if (job->next.load(std::memory_order_relaxed) >= job->total) {
        jobs_.pop_front();
        continue;
      }
    }
    Drain(*job, sm);
  }
}

void SmPool::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  for (LaunchSetup* setup : running_) setup->abort.store(true, std::memory_order_relaxed);
}

absl::Status SmPool::RunCooperative(LaunchSetup& setup) {
  const uint64_t total = setup.grid.Count();
  std::vector<std::unique_ptr<Block>> live;
  live.reserve(total);
  for (uint64_t index = 0; index < total; ++index) {
    live.push_back(std::make_unique<Block>());
    live.back()->Reset(setup, BlockIndex(index, setup.grid),
                       static_cast<uint32_t>(index % setup.sm_count));
  }
  uint32_t idle_rounds = 0;
  while (!live.empty()) {
    uint64_t before = 0, after = 0;
    for (const auto& block : live) before += block->progress();
    for (size_t i = 0; i < live.size();) {
      TALLY_ASSIGN_OR_RETURN(bool done, live[i]->RunRound());
      g_lane_instructions.fetch_add(live[i]->TakeLaneInstructions(), std::memory_order_relaxed);
      after += live[i]->progress();
      if (done) {
        live[i] = std::move(live.back());
        live.pop_back();
      } else {
        ++i;
      }
    }
    if (setup.abort.load(std::memory_order_relaxed)) return absl::OkStatus();
    idle_rounds = after == before ? idle_rounds + 1 : 0;
    if (idle_rounds > kMaxIdleRounds) {
      return CudaError(CUDA_ERROR_LAUNCH_FAILED,
                       fmt::format("kernel {}: cooperative grid deadlocked: {} of {} blocks keep "
                                   "spinning without storing, exiting or passing a barrier",
                                   setup.function->name, live.size(), total));
    }
  }
  return absl::OkStatus();
}

absl::Status SmPool::Run(LaunchSetup& setup) {
  if (setup.cooperative) {
    {
      std::lock_guard lock(mu_);
      if (cancelled_) return absl::CancelledError("the driver is shutting down");
      running_.push_back(&setup);
    }
    absl::Status status = RunCooperative(setup);
    std::lock_guard lock(mu_);
    std::erase(running_, &setup);
    return status;
  }
  auto job = std::make_shared<Job>();
  job->setup = &setup;
  job->total = setup.grid.Count();
  {
    std::lock_guard lock(mu_);
    if (cancelled_) return absl::CancelledError("the driver is shutting down");
    jobs_.push_back(job);
    running_.push_back(&setup);
  }
  cv_.notify_all();
  Drain(*job, 0);
  {
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->finished == job->total; });
  }
  {
    std::lock_guard lock(mu_);
    std::erase(jobs_, job);
    std::erase(running_, &setup);
  }
  return job->error;
}

}  // namespace tally::emu::exec
