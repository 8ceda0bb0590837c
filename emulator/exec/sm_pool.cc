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

// Rounds in a row in which no resident block (cooperative grid, cluster) stored, exited or
// passed a barrier before the blocks are reported as deadlocked (each round gives every warp a
// time slice of 4096 instructions, so this is about 4 million instructions of pure spinning
// per warp).
constexpr uint32_t kMaxIdleRounds = 1024;

Dim3 BlockIndex(uint64_t index, const Dim3& grid) {
  return {static_cast<uint32_t>(index % grid.x), static_cast<uint32_t>(index / grid.x % grid.y),
          static_cast<uint32_t>(index / (uint64_t{grid.x} * grid.y))};
}

// Block `rank` of cluster `cluster`: clusters are numbered x first over the grid of clusters,
// ranks x first within one (%cluster_ctarank). With 1x1x1 clusters: block `cluster`.
Dim3 BlockOf(uint64_t cluster, uint32_t rank, const LaunchSetup& setup) {
  const Dim3& shape = setup.cluster;
  const Dim3 id = BlockIndex(cluster, {setup.grid.x / shape.x, setup.grid.y / shape.y,
                                       setup.grid.z / shape.z});
  const Dim3 in = BlockIndex(rank, shape);
  return {id.x * shape.x + in.x, id.y * shape.y + in.y, id.z * shape.z + in.z};
}

std::atomic<uint64_t> g_lane_instructions{0};  // of every block run in this process

}  // namespace

uint64_t SmPool::LaneInstructions() { return g_lane_instructions.load(std::memory_order_relaxed); }

// The clusters of a launch (its blocks when clusters are 1x1x1), handed out one at a time.
struct SmPool::Job {
  LaunchSetup* setup = nullptr;
  uint64_t total = 0;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  uint64_t finished = 0;  // clusters run or skipped
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
  thread_local std::vector<std::unique_ptr<Block>> cluster;  // the same for multi-CTA clusters
  LaunchSetup& setup = *job.setup;
  const bool single = setup.cluster.Count() == 1;
  while (true) {
    uint64_t index = job.next.fetch_add(1, std::memory_order_relaxed);
    if (index >= job.total) return;
    absl::Status status;
    if (!setup.abort.load(std::memory_order_relaxed)) {
      if (single) {
        block.Reset(setup, BlockOf(index, 0, setup), sm);
        status = block.Run();
        g_lane_instructions.fetch_add(block.TakeLaneInstructions(), std::memory_order_relaxed);
      } else {
        status = RunResident(setup, index, 1, sm, cluster);
      }
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

absl::Status SmPool::RunResident(LaunchSetup& setup, uint64_t first_cluster, uint64_t clusters,
                                 uint32_t sm, std::vector<std::unique_ptr<Block>>& blocks) {
  const uint32_t cluster_size = static_cast<uint32_t>(setup.cluster.Count());
  const uint64_t total = clusters * cluster_size;
  while (blocks.size() < total) blocks.push_back(std::make_unique<Block>());
  std::vector<Block*> resident(total);  // by cluster, then rank: each cluster's peers in a row
  for (uint64_t index = 0; index < total; ++index) {
    resident[index] = blocks[index].get();
    resident[index]->Reset(setup, BlockOf(first_cluster + index / cluster_size,
                                           static_cast<uint32_t>(index % cluster_size), setup),
                           static_cast<uint32_t>((sm + index) % setup.sm_count));
  }
  if (cluster_size > 1) {
    for (uint64_t index = 0; index < total; ++index) {
      resident[index]->JoinCluster(&resident[index - index % cluster_size]);
    }
  }
  // Finished blocks stay in `resident` (the other CTAs of their cluster may still read their
  // shared memory) but are not run again.
  std::vector<bool> done(total, false);
  uint64_t live = total;
  uint32_t idle_rounds = 0;
  while (live > 0) {
    uint64_t before = 0, after = 0;
    for (const Block* block : resident) before += block->progress();
    for (uint64_t i = 0; i < total; ++i) {
      if (done[i]) continue;
      TALLY_ASSIGN_OR_RETURN(bool finished, resident[i]->RunRound());
      g_lane_instructions.fetch_add(resident[i]->TakeLaneInstructions(),
                                    std::memory_order_relaxed);
      if (finished) {
        done[i] = true;
        --live;
      }
    }
    if (cluster_size > 1) {
      for (uint64_t c = 0; c < total; c += cluster_size) {
        Block::ReleaseClusterBarrier(&resident[c], cluster_size);
      }
    }
    for (const Block* block : resident) after += block->progress();
    if (setup.abort.load(std::memory_order_relaxed)) return absl::OkStatus();
    idle_rounds = after == before ? idle_rounds + 1 : 0;
    if (idle_rounds > kMaxIdleRounds) {
      return CudaError(CUDA_ERROR_LAUNCH_FAILED,
                       fmt::format("kernel {}: {} deadlocked: {} of {} blocks keep spinning "
                                   "without storing, exiting or passing a barrier",
                                   setup.function->name,
                                   setup.cooperative ? "cooperative grid" : "cluster", live,
                                   total));
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
    std::vector<std::unique_ptr<Block>> blocks;
    absl::Status status =
        RunResident(setup, 0, setup.grid.Count() / setup.cluster.Count(), 0, blocks);
    std::lock_guard lock(mu_);
    std::erase(running_, &setup);
    return status;
  }
  auto job = std::make_shared<Job>();
  job->setup = &setup;
  job->total = setup.grid.Count() / setup.cluster.Count();
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
