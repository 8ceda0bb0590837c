// The driver's side of the policy contract in virtual time. Every policy call goes through
// CallPolicy, which carries out the answer's actions; Pump then announces the heads that
// became due, until no client has one to announce.
#include "benchmarks/sim/simulator.h"

#include <fmt/format.h>

#include <deque>
#include <optional>
#include <unordered_map>

#include "benchmarks/sim/event_queue.h"
#include "benchmarks/sim/gpu.h"
#include "common/status.h"

namespace tally::sim {

using scheduler::Action;
using scheduler::Decisions;
using scheduler::FormKind;
using scheduler::Head;
using scheduler::LaunchForm;
using scheduler::RunEnd;

scheduler::KernelInfo KernelInfoOf(const DeviceSpec& device, const TraceKernel& kernel,
                                   KernelId id) {
  scheduler::KernelInfo info;
  info.shape.kernel = id;
  info.shape.grid = kernel.grid;
  info.shape.block = kernel.block;
  info.shape.shared_bytes = kernel.shared_bytes;
  info.sliceable = kernel.transformable;
  info.preemptible = kernel.transformable;
  info.resident_per_sm = ResidentBlocksPerSm(device, kernel.resources());
  info.sm_count = device.sm_count;
  return info;
}

namespace {

class Simulation {
 public:
  Simulation(const SimOptions& options, std::vector<JobSpec> jobs, scheduler::Policy& policy)
      : options_(options),
        policy_(policy),
        gpu_(options.device, events_, [this](const LaunchEnd& end) { OnLaunchEnd(end); }) {
    for (size_t j = 0; j < jobs.size(); ++j) {
      Client& c = clients_.emplace_back();
      c.id = ClientId(j + 1);
      c.job = std::move(jobs[j]);
      for (size_t k = 0; k < c.job.trace.kernels.size(); ++k) {
        c.infos.push_back(KernelInfoOf(options.device, c.job.trace.kernels[k], SimKernelId(j, k)));
      }
      std::erase_if(c.job.arrivals, [&](Time t) { return t >= Time{0} + options.duration; });
      outcome_.jobs.emplace_back().requests_arrived = c.job.arrivals.size();
    }
  }

  SimOutcome Run() {
    for (Client& c : clients_) {
      CallPolicy([&] { policy_.ClientJoined(Now(), c.id, c.job.priority, out_); });
    }
    for (size_t i = 0; i < clients_.size(); ++i) {
      Client& c = clients_[i];
      if (!c.job.open_loop) {
        StartRequest(i);
        continue;
      }
      for (Time t : c.job.arrivals) {
        events_.At(t, [this, i] {
          Client& c = clients_[i];
          c.waiting.push_back(Now());
          if (!c.busy) StartRequest(i);
        });
      }
    }
    const Time window_end = Time{0} + options_.duration;
    events_.At(window_end, [this] { Snapshot(); });
    while (!events_.empty()) {
      const Time next = events_.next_time();
      if (next > window_end && (OpenLoopDone() || next > window_end + options_.drain)) break;
      events_.RunNext();
    }
    for (size_t i = 0; i < clients_.size(); ++i) {
      JobOutcome& job = outcome_.jobs[i];
      if (clients_[i].job.open_loop) {
        job.requests_unfinished = job.requests_arrived - job.latencies.size();
      }
    }
    outcome_.events = events_.processed();
    return std::move(outcome_);
  }

 private:
  enum class PieceKind : uint8_t { kOriginal, kSlice, kPtb };
  struct Piece {  // what a launch on the GPU model is
    size_t client = 0;
    PieceKind kind = PieceKind::kOriginal;
    bool notify = false;
  };
  struct Client {
    ClientId id;
    JobSpec job;
    std::vector<scheduler::KernelInfo> infos;
    std::deque<size_t> queue;    // kernels submitted and not yet announced
    std::optional<size_t> head;  // announced and not consumed
    bool started = false;        // the head runs in a transformed form
    LaunchForm form;
    uint64_t next_block = 0;  // of the started kernel
    bool in_flight = false;   // a run of it is on the device or not yet reported
    uint64_t launch = 0;      // that run
    std::optional<Time> preempted_at;
    bool busy = false;         // a request or iteration under way
    size_t kernels_done = 0;   // of it
    std::deque<Time> waiting;  // open loop: arrivals not yet served (front: current)
    uint64_t completed = 0;
  };

  Time Now() const { return events_.now(); }
  const TraceKernel& KernelOf(const Client& c, size_t k) const { return c.job.trace.kernels[k]; }

  template <typename F>
  void CallPolicy(F&& call) {
    out_.Clear();
    call();
    const std::vector<Action> actions(out_.actions().begin(), out_.actions().end());
    const std::optional<Time> wake = out_.wake();
    for (const Action& action : actions) Apply(action);
    if (wake) ScheduleWake(*wake);
  }

  // Announces each client's next head once the previous one is consumed.
  void Pump() {
    for (bool announced = true; announced;) {
      announced = false;
      for (Client& c : clients_) {
        if (c.head || c.started || c.queue.empty()) continue;
        c.head = c.queue.front();
        c.queue.pop_front();
        announced = true;
        const Head head = Head::Kernel(c.infos[*c.head]);
        CallPolicy([&] { policy_.HeadArrived(Now(), c.id, head, out_); });
      }
    }
  }

  void ScheduleWake(Time wake) {
    if (pending_wake_ && *pending_wake_ <= wake) return;
    pending_wake_ = wake;
    events_.At(wake, [this, wake] {
      if (pending_wake_ != wake) return;  // superseded by an earlier request
      pending_wake_.reset();
      CallPolicy([&] { policy_.Woken(Now(), out_); });
      Pump();
    });
  }

  void Apply(const Action& action) {
    const size_t index = action.client.value() - 1;
    if (index >= clients_.size()) return;
    Client& c = clients_[index];
    if (action.kind == Action::Kind::kPreempt) {
      if (c.started && c.in_flight && c.form.kind == FormKind::kPreemptible &&
          gpu_.Preempt(c.launch)) {
        ++outcome_.preemptions;
        c.preempted_at = Now();
      }
      return;
    }
    if (!c.head) return;
    if (c.started) {
      // A PTB kernel resumes with the workers the policy gives it now.
      if (c.form.kind == FormKind::kPreemptible && action.form.kind == FormKind::kPreemptible) {
        c.form.workers = action.form.workers;
      }
      // A kernel in sized slices (or a PTB kernel stopped, going on in them) runs its next slice
      // at the size the policy gives it now.
      if (action.form.sized_slice()) c.form = action.form;
      if (!c.in_flight) LaunchPiece(index, action.foreground);
      return;
    }
    const TraceKernel& kernel = KernelOf(c, *c.head);
    if (action.form.kind == FormKind::kOriginal || !kernel.transformable) {
      LaunchSpec spec{.stream = index,
                      .high_priority = action.foreground,
                      .resources = kernel.resources(),
                      .units = kernel.grid.Count(),
                      .unit_time = kernel.block_time,
                      .interference = kernel.interference};
      pieces_[gpu_.Launch(spec)] = {index, PieceKind::kOriginal, action.notify};
      if (action.risky) ++outcome_.risky_launches;
      c.head.reset();
      return;
    }
    c.started = true;
    c.form = action.form;
    c.next_block = 0;
    LaunchPiece(index, action.foreground);
  }

  // The next slice, or the (resumed) PTB run, of the client's started kernel.
  void LaunchPiece(size_t index, bool foreground) {
    Client& c = clients_[index];
    const TraceKernel& kernel = KernelOf(c, *c.head);
    const uint64_t total = kernel.grid.Count();
    const uint64_t remaining = total - c.next_block;
    LaunchSpec spec{.stream = index,
                    .high_priority = foreground,
                    .resources = kernel.resources(),
                    .interference = kernel.interference};
    PieceKind kind;
    if (c.form.kind == FormKind::kSliced) {
      const uint64_t slices = std::max<uint32_t>(c.form.slices, 1);
      spec.units = std::min(remaining, c.form.sized_slice() ? uint64_t{c.form.slice_blocks}
                                                            : (total + slices - 1) / slices);
      spec.unit_time =
          std::chrono::duration_cast<Duration>(kernel.block_time * kernel.sliced_slowdown);
      kind = PieceKind::kSlice;
    } else {
      const scheduler::KernelInfo& info = c.infos[*c.head];
      spec.units = remaining;
      spec.persistent = true;
      spec.workers =
          c.form.workers > 0 ? c.form.workers : uint64_t{info.resident_per_sm} * info.sm_count;
      spec.unit_time =
          std::chrono::duration_cast<Duration>(kernel.block_time * kernel.ptb_slowdown);
      kind = PieceKind::kPtb;
    }
    c.in_flight = true;
    c.launch = gpu_.Launch(spec);
    pieces_[c.launch] = {index, kind, true};
  }

  void OnLaunchEnd(const LaunchEnd& end) {
    const Piece piece = pieces_.at(end.launch);
    pieces_.erase(end.launch);
    Client& c = clients_[piece.client];
    const Time reported = end.time + options_.device.completion_latency;
    if (piece.kind == PieceKind::kOriginal) {
      KernelDone(piece.client, end.time);
      if (!piece.notify) return;
      const uint64_t blocks = end.units_done;
      events_.At(reported, [this, index = piece.client, blocks] {
        CallPolicy([&] {
          policy_.RunEnded(Now(), clients_[index].id, {FormKind::kOriginal, true, blocks, blocks},
                           out_);
        });
        Pump();
      });
      return;
    }
    const uint64_t total = KernelOf(c, *c.head).grid.Count();
    c.next_block += end.units_done;
    const bool finished = c.next_block >= total;
    if (c.preempted_at) {
      outcome_.turnarounds.push_back(end.time - *c.preempted_at);
      c.preempted_at.reset();
    }
    if (finished) KernelDone(piece.client, end.time);
    const RunEnd run_end{c.form.kind, finished, c.next_block, total};
    events_.At(reported, [this, index = piece.client, run_end] {
      Client& c = clients_[index];
      c.in_flight = false;
      if (run_end.finished) {
        c.started = false;
        c.head.reset();
      }
      CallPolicy([&] { policy_.RunEnded(Now(), c.id, run_end, out_); });
      Pump();
    });
  }

  void StartRequest(size_t index) {
    Client& c = clients_[index];
    c.busy = true;
    c.kernels_done = 0;
    const size_t n = c.job.trace.kernels.size();
    const Duration gap = c.job.trace.launch_gap;
    if (gap == Duration{0}) {
      for (size_t k = 0; k < n; ++k) c.queue.push_back(k);
      Pump();
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      events_.At(Now() + gap * static_cast<int64_t>(k), [this, index, k] {
        clients_[index].queue.push_back(k);
        Pump();
      });
    }
  }

  void KernelDone(size_t index, Time when) {
    Client& c = clients_[index];
    if (++c.kernels_done < c.job.trace.kernels.size()) return;
    // The application sees its request done when its synchronisation returns.
    events_.At(when + options_.device.completion_latency, [this, index] {
      Client& c = clients_[index];
      ++c.completed;
      c.busy = false;
      if (c.job.open_loop) {
        outcome_.jobs[index].latencies.push_back(Now() - c.waiting.front());
        c.waiting.pop_front();
        if (!c.waiting.empty()) StartRequest(index);
      } else {
        StartRequest(index);
      }
    });
  }

  void Snapshot() {
    for (size_t i = 0; i < clients_.size(); ++i) {
      const Client& c = clients_[i];
      double done = static_cast<double>(c.completed);
      if (!c.job.open_loop && c.busy) {
        done += static_cast<double>(c.kernels_done) / c.job.trace.kernels.size();
      }
      outcome_.jobs[i].completed_in_window = done;
    }
  }

  bool OpenLoopDone() const {
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (clients_[i].job.open_loop &&
          outcome_.jobs[i].latencies.size() < outcome_.jobs[i].requests_arrived) {
        return false;
      }
    }
    return true;
  }

  const SimOptions options_;
  scheduler::Policy& policy_;
  EventQueue events_;
  Gpu gpu_;
  std::vector<Client> clients_;
  std::unordered_map<uint64_t, Piece> pieces_;
  Decisions out_;
  std::optional<Time> pending_wake_;
  SimOutcome outcome_;
};

}  // namespace

absl::StatusOr<SimOutcome> Simulate(const SimOptions& options, std::vector<JobSpec> jobs,
                                    scheduler::Policy& policy) {
  for (const JobSpec& job : jobs) {
    TALLY_RETURN_IF_ERROR(ValidateTrace(job.trace, options.device));
    if (job.trace.kernels.empty()) {
      return absl::InvalidArgumentError(fmt::format("job {}: its trace has no kernels", job.name));
    }
  }
  Simulation simulation(options, std::move(jobs), policy);
  return simulation.Run();
}

}  // namespace tally::sim
