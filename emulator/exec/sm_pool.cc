// Device-wide block dispatch: SM resources, the order of launches, the host threads that run
// the resident blocks, and failure propagation within a launch.
#include "emulator/exec/sm_pool.h"

#include <algorithm>
#include <atomic>
#include <span>
#include <thread>
#include <utility>

#include "emulator/exec/resident_unit.h"

namespace tally::emu::exec {

struct SmPool::Launch {
  explicit Launch(LaunchSetup& launch_setup)
      : setup(&launch_setup),
        footprint(FootprintOf(launch_setup.block.Count(),
                              uint64_t{launch_setup.function->static_shared_bytes} +
                                  launch_setup.dynamic_shared_bytes)),
        clusters_per_unit(launch_setup.cooperative
                              ? launch_setup.grid.Count() / launch_setup.cluster.Count()
                              : 1),
        blocks_per_unit(clusters_per_unit * launch_setup.cluster.Count()),
        units(launch_setup.grid.Count() / blocks_per_unit) {}

  // A lower priority number is more urgent (as for CUDA streams).
  static bool MoreUrgent(const Launch* a, const Launch* b) {
    return a->setup->priority < b->setup->priority;
  }

  LaunchSetup* setup;
  BlockFootprint footprint;
  uint64_t clusters_per_unit;  // a cooperative grid is one unit, otherwise one cluster is
  uint64_t blocks_per_unit;
  uint64_t units;
  uint64_t dispatched = 0;  // units placed on SMs or skipped
  uint64_t finished = 0;    // units run or skipped
  absl::Status error;       // the first failure
  std::condition_variable done;
};

// A unit placed on SMs, for the host thread that owns the first of them to start.
struct SmPool::Assignment {
  Launch* launch = nullptr;
  uint64_t first_cluster = 0;
  uint64_t clusters = 0;
  uint32_t sm = 0;            // a single block's SM
  std::vector<uint32_t> sms;  // several blocks: the SM of each
  std::span<const uint32_t> Sms() const {
    return sms.empty() ? std::span<const uint32_t>(&sm, 1) : std::span<const uint32_t>(sms);
  }
};

struct SmPool::Worker {
  std::condition_variable wake;        // with mu_: an assignment arrived, or stopping
  std::vector<Assignment> inbox;       // guarded by mu_
  std::atomic<bool> has_inbox{false};  // read between rounds without the lock
  std::thread thread;
};

uint32_t SmPool::Sm::Fits(const BlockFootprint& footprint) const {
  return static_cast<uint32_t>(
      std::min<uint64_t>({blocks, warps / footprint.warps, shared_bytes / footprint.shared_bytes}));
}

SmPool::SmPool(uint32_t sm_count, uint32_t threads)
    : thread_count_(std::clamp<uint32_t>(threads, 1, sm_count)), sms_(sm_count) {
  for (uint32_t i = 0; i < thread_count_; ++i) workers_.push_back(std::make_unique<Worker>());
  for (auto& worker : workers_) {
    worker->thread = std::thread([this, w = worker.get()] { WorkerLoop(*w); });
  }
}

SmPool::~SmPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  for (auto& worker : workers_) {
    worker->wake.notify_all();
    worker->thread.join();
  }
}

absl::Status SmPool::Run(LaunchSetup& setup) {
  Launch launch(setup);
  std::unique_lock lock(mu_);
  if (cancelled_) return absl::CancelledError("the driver is shutting down");
  running_.push_back(&launch);
  // After the launches of its priority that arrived before it: launch order is arrival order.
  queue_.insert(std::upper_bound(queue_.begin(), queue_.end(), &launch, Launch::MoreUrgent),
                &launch);
  DispatchLocked();
  launch.done.wait(lock, [&] { return launch.finished == launch.units; });
  std::erase(running_, &launch);
  return launch.error;
}

void SmPool::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  for (Launch* launch : running_) launch->setup->abort.store(true, std::memory_order_relaxed);
  DispatchLocked();  // skips what the launches have not dispatched yet
}

void SmPool::DispatchLocked() {
  while (!queue_.empty()) {
    Launch& launch = *queue_.front();
    while (launch.dispatched < launch.units) {
      if (launch.setup->abort.load(std::memory_order_relaxed)) {  // failed or cancelled
        launch.finished += launch.units - launch.dispatched;
        launch.dispatched = launch.units;
        if (launch.finished == launch.units) launch.done.notify_all();
      } else if (PlaceLocked(launch)) {
        ++launch.dispatched;
      } else {
        return;  // in-order dispatch: nothing passes the most urgent launch's next unit
      }
    }
    queue_.erase(queue_.begin());
  }
}

bool SmPool::PlaceLocked(Launch& launch) {
  const uint32_t n = static_cast<uint32_t>(sms_.size());
  const BlockFootprint& footprint = launch.footprint;
  Assignment assignment;
  assignment.launch = &launch;
  assignment.first_cluster = launch.dispatched * launch.clusters_per_unit;
  assignment.clusters = launch.clusters_per_unit;
  if (launch.blocks_per_unit == 1) {
    // The SM with the most free warps (the first of equals from next_sm_ on), so that blocks
    // spread over the SMs and their host threads.
    uint32_t best = n;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t sm = (next_sm_ + i) % n;
      if (sms_[sm].Fits(footprint) > 0 && (best == n || sms_[sm].warps > sms_[best].warps)) {
        best = sm;
      }
    }
    if (best == n) return false;
    assignment.sm = best;
  } else {
    // All blocks at once or none, one per SM with room in turn.
    std::vector<uint32_t> room(n);
    uint64_t total = 0;
    for (uint32_t sm = 0; sm < n; ++sm) total += room[sm] = sms_[sm].Fits(footprint);
    if (total < launch.blocks_per_unit) return false;
    assignment.sms.reserve(launch.blocks_per_unit);
    for (uint32_t i = 0; assignment.sms.size() < launch.blocks_per_unit; ++i) {
      const uint32_t sm = (next_sm_ + i) % n;
      if (room[sm] > 0) {
        --room[sm];
        assignment.sms.push_back(sm);
      }
    }
  }
  for (uint32_t sm : assignment.Sms()) {
    sms_[sm].warps -= footprint.warps;
    sms_[sm].blocks -= 1;
    sms_[sm].shared_bytes -= footprint.shared_bytes;
  }
  next_sm_ = (assignment.Sms().back() + 1) % n;
  Worker& worker = *workers_[assignment.Sms().front() % thread_count_];
  worker.inbox.push_back(std::move(assignment));
  worker.has_inbox.store(true, std::memory_order_relaxed);
  worker.wake.notify_one();
  return true;
}

void SmPool::FinishLocked(Launch& launch, const std::vector<uint32_t>& sms, absl::Status status) {
  for (uint32_t sm : sms) {
    sms_[sm].warps += launch.footprint.warps;
    sms_[sm].blocks += 1;
    sms_[sm].shared_bytes += launch.footprint.shared_bytes;
  }
  if (!status.ok() && launch.error.ok()) {
    launch.error = std::move(status);
    launch.setup->abort.store(true, std::memory_order_relaxed);
  }
  if (++launch.finished == launch.units) launch.done.notify_all();
  DispatchLocked();
}

void SmPool::WorkerLoop(Worker& self) {
  struct Running {
    ResidentUnit* unit;  // nullptr once finished (until the end of the pass)
    Launch* launch;
  };
  BlockCache cache;
  std::vector<std::unique_ptr<ResidentUnit>> units;  // every unit object this thread made
  std::vector<ResidentUnit*> spare;
  std::vector<Running> resident;
  std::vector<Assignment> incoming;
  // Takes the inbox (waiting for work while nothing is resident) and starts its units: the
  // first in `hole` if given, the others after the resident ones. False when the pool stops.
  auto admit = [&](Running* hole) {
    {
      std::unique_lock lock(mu_);
      self.wake.wait(lock, [&] { return stopping_ || !self.inbox.empty() || !resident.empty(); });
      if (stopping_) return false;
      incoming.swap(self.inbox);
      self.has_inbox.store(false, std::memory_order_relaxed);
    }
    for (const Assignment& assignment : incoming) {
      if (spare.empty()) {
        units.push_back(std::make_unique<ResidentUnit>());
        spare.push_back(units.back().get());
      }
      ResidentUnit* unit = spare.back();
      spare.pop_back();
      unit->Start(*assignment.launch->setup, assignment.first_cluster, assignment.clusters,
                  assignment.Sms(), cache);
      if (hole != nullptr) {
        *std::exchange(hole, nullptr) = {unit, assignment.launch};
      } else {
        resident.push_back({unit, assignment.launch});
      }
    }
    incoming.clear();
    return true;
  };
  while (true) {
    if ((resident.empty() || self.has_inbox.load(std::memory_order_relaxed)) && !admit(nullptr)) {
      return;
    }
    // One pass: each resident unit runs for its round's budget. Units that arrive meanwhile join
    // this pass, so a newly dispatched block starts within one unit's round.
    for (size_t i = 0; i < resident.size(); ++i) {
      uint64_t budget = resident[i].unit->RoundBudget();
      while (true) {
        absl::StatusOr<bool> finished = resident[i].unit->Step(budget);
        if (finished.ok() && !*finished) break;
        ResidentUnit* unit = std::exchange(resident[i].unit, nullptr);
        {
          std::lock_guard lock(mu_);
          FinishLocked(*resident[i].launch, unit->sms(), std::move(finished).status());
        }
        unit->Stop(cache);
        spare.push_back(unit);
        // The rest of the budget goes to a unit dispatched meanwhile (usually into the room
        // just freed), which starts on the block objects just freed, still in cache.
        if (budget == 0 || !self.has_inbox.load(std::memory_order_relaxed)) break;
        if (!admit(&resident[i])) return;
        if (resident[i].unit == nullptr) break;
      }
      if (self.has_inbox.load(std::memory_order_relaxed) && !admit(nullptr)) return;
    }
    std::erase_if(resident, [](const Running& running) { return running.unit == nullptr; });
  }
}

}  // namespace tally::emu::exec
