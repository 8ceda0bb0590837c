// Block distribution over the virtual SMs and failure propagation within a launch.
#include "emulator/exec/sm_pool.h"

#include <atomic>

#include "common/log.h"

namespace tally::emu::exec {

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
      Dim3 ctaid{static_cast<uint32_t>(index % grid.x),
                 static_cast<uint32_t>(index / grid.x % grid.y),
                 static_cast<uint32_t>(index / (uint64_t{grid.x} * grid.y))};
      block.Reset(setup, ctaid, sm);
      status = block.Run();
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

absl::Status SmPool::Run(LaunchSetup& setup) {
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
