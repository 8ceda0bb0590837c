// The dispatch loop: control events, then the ends of runs, then the policy's wake-up, then new
// queue heads; each event goes to the policy, whose actions are carried out at once. Only this
// thread pops or clears queues, so it reads a queue's head without the lock while sessions
// append behind it (a deque's push_back keeps references to its elements valid).
#include "server/dispatcher.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/exception_barrier.h"
#include "common/log.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {

using scheduler::Time;

namespace {
// The first poll of a run on the device; each poll that finds nothing doubles the interval up
// to the dispatcher's maximum.
constexpr scheduler::Duration kMinPoll = std::chrono::microseconds(10);

// How often the dispatch thread looks at a faulted context's recovery.
constexpr scheduler::Duration kFaultPoll = std::chrono::milliseconds(5);

// The device window (Dispatcher::NoteIssued): per stream of a client at most about
// kFenceEvery * (kMaxFences + 1) commands issued and not yet done, far below the emulated GPU's
// stream bound (emulator/internal/stream.h) and a GPU's push buffer.
constexpr uint32_t kFenceEvery = 32;
constexpr size_t kMaxFences = 8;
// Counts of streams that were destroyed stay behind; past this many they are all dropped, which
// only leaves up to kFenceEvery - 1 commands per stream unfenced once.
constexpr size_t kMaxCountedStreams = 4096;

// Issues one command of `client`: the dispatch thread serves every client, so a command that
// throws (std::bad_alloc while packing a launch) fails alone, as a CUresult its client sees at
// its next synchronising call.
template <typename Issue>
CUresult Guarded(ClientId client, Issue&& issue) {
  CUresult result = CUDA_ERROR_UNKNOWN;
  const absl::Status status = CatchExceptions(
      fmt::format("client {}: issuing a command", client.value()), [&] {
        result = issue();
        return absl::OkStatus();
      });
  if (status.ok()) return result;
  TALLY_LOG_ERROR("{}", status.ToString());
  return absl::IsResourceExhausted(status) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_UNKNOWN;
}

// Whether the launch could run in a transformed form that is still to be made.
bool FormsToMake(const KernelLaunch& launch) {
  return !launch.OriginalOnly() && launch.kernel != nullptr && launch.kernel->forms_pending.get();
}

// Has the background worker make the launch's forms (at once if already asked: cheap).
void RequestForms(const KernelLaunch& launch) {
  if (FormsToMake(launch)) launch.module->RequestForms(*launch.kernel);
}

}  // namespace

struct Dispatcher::ClientQueue {
  ClientId client;
  SchedulingStats stats;
  size_t max_queued = SIZE_MAX;
  // Under mutex_.
  ClientPriority priority = ClientPriority::Unset();
  SlowdownBudget budget;
  std::deque<QueuedCommand> commands;
  uint64_t enqueued = 0;  // commands ever enqueued
  uint64_t issued = 0;    // commands issued (transformed kernels: finished), in order
  bool removed = false;   // RemoveClient ran: the rest will never be issued
  bool gone = false;      // the dispatch thread let go of it and its runs ended
  // The smallest `issued` a WaitIssued waits for: waiters are woken only then, not after every
  // command of a long queue.
  uint64_t wake_at = UINT64_MAX;
  DeferredError deferred_error;
  // Written by the dispatch thread, read by any: MeasuredSlowdown, negative for none.
  std::atomic<double> measured_slowdown{-1};
  // Dispatch thread only.
  // The class whose latency histograms its kernels' latencies go to (as the policy last heard).
  ipc::PriorityClass latency_class = ipc::PriorityClass::kBestEffort;
  bool head_announced = false;
  Time announced_at{0};
  // Since when the head kernel waits for its transformed forms (WaitForForms).
  std::optional<Time> forms_wait_since;
  // The announced head was told to the policy with its forms still to be made
  // (KernelInfo::forms_pending): it is told anew once they are (UpdateHeadForms).
  bool head_forms_pending = false;
  // The policy would run the client's kernels shaped (Policy::WaitsForForms), as of the dispatch
  // thread's latest control events: its launches have their forms made as they are queued.
  std::atomic<bool> shaped{false};
  // The head kernel while it runs in a transformed form; the queue's front is then an empty
  // placeholder that keeps the client's later work behind it.
  std::unique_ptr<KernelLaunch> started;
  scheduler::FormKind started_form = scheduler::FormKind::kOriginal;
  // --unfenceable alone: the head (an unfenced kernel) is admitted by the gate; or since when it
  // waits to be.
  bool alone = false;
  std::optional<Time> alone_waiting_since;
  // The device window: commands issued per stream since its last fence, and the fences on
  // the device, oldest first.
  absl::flat_hash_map<CUstream, uint32_t> unfenced;
  std::deque<CUevent> fences;
};

absl::StatusOr<std::unique_ptr<Dispatcher>> Dispatcher::Create(
    const Backend& backend, std::unique_ptr<scheduler::Policy> policy, profiler::Profiler* profiler,
    scheduler::Duration max_poll, std::function<void()> thread_setup, ContextRecovery recovery,
    UnfencedGate* unfenced, scheduler::Duration forms_wait) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<KernelRuns> runs, KernelRuns::Create(backend, profiler));
  return std::unique_ptr<Dispatcher>(
      new Dispatcher(backend, std::move(policy), profiler, std::move(runs), max_poll,
                     std::move(thread_setup), std::move(recovery), unfenced, forms_wait));
}

Dispatcher::Dispatcher(const Backend& backend, std::unique_ptr<scheduler::Policy> policy,
                       profiler::Profiler* profiler, std::unique_ptr<KernelRuns> runs,
                       scheduler::Duration max_poll, std::function<void()> thread_setup,
                       ContextRecovery recovery, UnfencedGate* unfenced,
                       scheduler::Duration forms_wait)
    : backend_(backend),
      api_(backend.api()),
      profiler_(profiler),
      recovery_(std::move(recovery)),
      policy_(std::move(policy)),
      uses_transformed_forms_(policy_->UsesTransformedForms()),
      runs_(std::move(runs)),
      max_poll_(std::max(max_poll, kMinPoll)),
      forms_wait_(forms_wait),
      poll_interval_(kMinPoll),
      unfenced_(unfenced),
      thread_setup_(std::move(thread_setup)),
      end_watcher_(MakeEndWatcher()),
      thread_([this] { DispatchLoop(); }) {}

std::unique_ptr<RunEndWatcher> Dispatcher::MakeEndWatcher() {
  return std::make_unique<RunEndWatcher>(api_, thread_setup_, [this] { Wake(); });
}

void Dispatcher::WatchEnd(const scheduler::Action& action, CUstream stream) {
  // The policy issues a background kernel's next slice or resumption, or the background's next
  // kernel, when it hears of this run's end: the watcher tells it at once. (It would be busy
  // with the foreground's reported kernels, whose ends are timed by their events anyway.)
  const bool reported = action.notify || action.form.kind != scheduler::FormKind::kOriginal;
  if (reported && !action.foreground) end_watcher_->Watch(stream);
}

Dispatcher::~Dispatcher() {
  Stop();
  for (const std::shared_ptr<ClientQueue>& queue : queues_) ReleaseFences(*queue);
  for (const std::shared_ptr<ClientQueue>& queue : leaving_) ReleaseFences(*queue);
  for (const AloneEnd& end : alone_ends_) free_fences_.push_back(end.event);
  DestroyFreeFences();
}

void Dispatcher::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<Dispatcher::ClientQueue> Dispatcher::AddClient(ClientId client,
                                                               ClientPriority priority,
                                                               size_t max_queued) {
  auto queue = std::make_shared<ClientQueue>();
  queue->client = client;
  queue->priority = priority;
  queue->max_queued = max_queued;
  {
    std::lock_guard lock(mutex_);
    queues_.push_back(queue);
    control_.push_back({Control::Kind::kJoin, queue, priority});
  }
  work_.notify_one();
  return queue;
}

bool Dispatcher::RemoveClient(ClientQueue& queue, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (!queue.removed) {
    queue.removed = true;
    control_.push_back({Control::Kind::kLeave, *Owner(queue), queue.priority});
    work_.notify_one();
    issued_.notify_all();  // waiters for commands that will never be issued
    room_.notify_all();
  }
  const auto ended = [&] { return queue.gone || stopping_; };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    gone_.wait(lock, ended);
  } else if (!gone_.wait_until(lock, deadline, ended)) {
    return false;  // the dispatch thread keeps the queue until its runs end
  }
  if (const auto it = Owner(queue); it != queues_.end()) queues_.erase(it);
  return true;
}

std::vector<std::shared_ptr<Dispatcher::ClientQueue>>::iterator Dispatcher::Owner(
    const ClientQueue& queue) {
  return std::find_if(queues_.begin(), queues_.end(),
                      [&](const auto& q) { return q.get() == &queue; });
}

void Dispatcher::SetPriority(ClientQueue& queue, ClientPriority priority) {
  {
    std::lock_guard lock(mutex_);
    if (queue.removed) return;
    queue.priority = priority;
    control_.push_back({Control::Kind::kPriority, *Owner(queue), priority});
  }
  work_.notify_one();
}

ClientPriority Dispatcher::priority(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.priority;
}

void Dispatcher::SetBudget(ClientQueue& queue, const SlowdownBudget& budget) {
  {
    std::lock_guard lock(mutex_);
    if (queue.removed) return;
    queue.budget = budget;
    control_.push_back({Control::Kind::kBudget, *Owner(queue), queue.priority, budget});
  }
  work_.notify_one();
}

SlowdownBudget Dispatcher::budget(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.budget;
}

std::optional<double> Dispatcher::measured_slowdown(ClientQueue& queue) const {
  const double measured = queue.measured_slowdown.load(std::memory_order_relaxed);
  return measured < 0 ? std::nullopt : std::optional<double>(measured);
}

void Dispatcher::Enqueue(ClientQueue& queue, Command command) {
  {
    std::lock_guard lock(mutex_);
    if (queue.removed) return;
    queue.commands.push_back({std::move(command), nullptr, nullptr});
    ++queue.enqueued;
    pending_work_ = true;
  }
  work_.notify_one();
}

void Dispatcher::EnqueueKernel(ClientQueue& queue, KernelLaunch launch) {
  if (queue.shaped.load(std::memory_order_relaxed)) RequestForms(launch);
  auto kernel = std::make_unique<KernelLaunch>(std::move(launch));
  {
    std::lock_guard lock(mutex_);
    if (queue.removed) return;
    queue.commands.push_back({{}, std::move(kernel), nullptr});
    ++queue.enqueued;
    pending_work_ = true;
  }
  work_.notify_one();
}

bool Dispatcher::HasRoom(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.commands.size() < queue.max_queued || queue.removed;
}

void Dispatcher::WaitForRoom(ClientQueue& queue, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  room_.wait_until(lock, deadline,
                   [&] { return queue.commands.size() < queue.max_queued || queue.removed; });
}

void Dispatcher::Enqueue(ClientQueue& queue, std::vector<QueuedCommand>& commands) {
  if (queue.shaped.load(std::memory_order_relaxed)) {
    for (const QueuedCommand& command : commands) {
      if (command.kernel != nullptr) RequestForms(*command.kernel);
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (!queue.removed) {
      for (QueuedCommand& command : commands) queue.commands.push_back(std::move(command));
      queue.enqueued += commands.size();
      pending_work_ = true;
    }
  }
  commands.clear();
  work_.notify_one();
}

uint64_t Dispatcher::Ticket(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.enqueued;
}

void Dispatcher::WaitIssued(ClientQueue& queue, uint64_t ticket) {
  std::unique_lock lock(mutex_);
  while (queue.issued < ticket && !queue.removed) {
    // Several may wait: each woken one that is not done yet sets its ticket again.
    queue.wake_at = std::min(queue.wake_at, ticket);
    issued_.wait(lock);
  }
}

bool Dispatcher::Issued(ClientQueue& queue, uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return queue.issued >= ticket || queue.removed;
}

DeferredError Dispatcher::TakeDeferredError(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return std::exchange(queue.deferred_error, {});
}

void Dispatcher::DeferError(ClientQueue& queue, CUresult result, std::string what) {
  std::lock_guard lock(mutex_);
  RecordFailure(queue, result, std::move(what));
}

void Dispatcher::RecordFailure(ClientQueue& queue, CUresult result, std::string what) {
  if (queue.deferred_error.result != CUDA_SUCCESS) return;
  TALLY_LOG_WARN("client {}: {} failed with {} (reported at its next synchronising call)",
                 queue.client.value(), what.empty() ? "asynchronous work" : what,
                 CuResultText(result));
  queue.deferred_error = {result, std::move(what)};
}

size_t Dispatcher::queued(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.commands.size();
}

const SchedulingStats& Dispatcher::stats(ClientQueue& queue) { return queue.stats; }

RunOwner Dispatcher::OwnerOf(ClientQueue& queue) {
  return {queue.client, &queue.stats, &latencies_[static_cast<size_t>(queue.latency_class)],
          queue.latency_class == ipc::PriorityClass::kHigh ? &high_busy_ : nullptr};
}

const ClassLatencyHistograms& Dispatcher::latencies(ipc::PriorityClass c) const {
  return latencies_[static_cast<size_t>(c)];
}

Time Dispatcher::Now() const {
  return std::chrono::duration_cast<Time>(
      std::chrono::steady_clock::now().time_since_epoch());
}

Dispatcher::ClientQueue* Dispatcher::Find(ClientId client) {
  auto it = std::find_if(clients_.begin(), clients_.end(),
                         [&](const ClientQueue* q) { return q->client == client; });
  return it == clients_.end() ? nullptr : *it;
}

std::chrono::steady_clock::time_point Dispatcher::last_round() const {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_round_ns_.load()));
}

void Dispatcher::KeepRounding(std::chrono::nanoseconds at_most) {
  round_at_least_ns_.store(at_most.count());
  Wake();
}

void Dispatcher::DispatchLoop() {
  thread_setup_();
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    pending_work_ = false;
    lock.unlock();
    const Time now = Now();
    // Now() is the steady clock since its epoch: the heartbeat needs no second clock read.
    last_round_ns_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
    activity_ = false;
    // The last barrier: an exception here (the policy's std::bad_alloc) loses one round of
    // decisions, never the thread that serves every client.
    const absl::Status round = CatchExceptions("dispatcher", [&] {
      HandleControl(now);
      PollRuns(now);
      PollHostFunctions();
      PollAloneEnds();
      if (wake_ && *wake_ <= now) {
        wake_.reset();
        decisions_.Clear();
        policy_->Woken(now, decisions_);
        Apply(now);
      }
      AnnounceHeads(now);
      told_ = now;
      FinishLeaving();
      RecoverFromFault();
      return absl::OkStatus();
    });
    if (!round.ok()) TALLY_LOG_ERROR("{}", round.ToString());
    lock.lock();
    if (stopping_ || pending_work_ || !control_.empty()) continue;
    // Sleep until work arrives, the policy wants to decide again, or runs are due a poll.
    std::optional<Time> deadline = wake_;
    if (!runs_->empty() || !host_functions_.empty() || throttled_ || alone_waiting_ ||
        !alone_ends_.empty()) {
      poll_interval_ = activity_ ? kMinPoll : std::min(poll_interval_ * 2, max_poll_);
      deadline = std::min(deadline.value_or(Time::max()), now + poll_interval_);
    }
    if (const int64_t bound = round_at_least_ns_.load(); bound > 0) {
      deadline = std::min(deadline.value_or(Time::max()),
                          now + std::chrono::duration_cast<Time>(std::chrono::nanoseconds(bound)));
    }
    if (forms_deadline_) deadline = std::min(deadline.value_or(Time::max()), *forms_deadline_);
    // While the context is faulted, the clients leaving are waited for by polling.
    if (recovery_.faults != nullptr && recovery_.faults->faulted()) {
      deadline = std::min(deadline.value_or(Time::max()), now + kFaultPoll);
    }
    if (deadline) {
      work_.wait_until(lock, std::chrono::steady_clock::time_point(
                                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     *deadline)));
    } else {
      work_.wait(lock);
    }
  }
}

void Dispatcher::HandleControl(Time now) {
  std::vector<Control> events;
  {
    std::lock_guard lock(mutex_);
    events.swap(control_);
  }
  if (!events.empty()) told_ = now;
  for (Control& event : events) {
    ClientQueue& queue = *event.queue;
    decisions_.Clear();
    switch (event.kind) {
      case Control::Kind::kJoin:
        clients_.push_back(&queue);
        queue.latency_class = ClassOf(event.priority);
        policy_->ClientJoined(now, queue.client, event.priority, decisions_);
        break;
      case Control::Kind::kPriority:
        if (Find(queue.client) == nullptr) continue;
        queue.latency_class = ClassOf(event.priority);
        policy_->PriorityChanged(now, queue.client, event.priority, decisions_);
        break;
      case Control::Kind::kBudget:
        if (Find(queue.client) == nullptr) continue;
        policy_->BudgetChanged(now, queue.client, event.budget, decisions_);
        NoteMeasuredSlowdown(queue);  // measured against the old budget: none now
        break;
      case Control::Kind::kLeave: {
        {
          std::lock_guard lock(mutex_);
          queue.commands.clear();  // `started` (a kernel's runs may still use it) stays
        }
        std::erase(clients_, &queue);
        EndAlone(queue);
        queue.alone_waiting_since.reset();
        queue.stats.unfenced_waiting = 0;
        DropHostFunctions(queue.client);
        ReleaseFences(queue);
        runs_->Forget(queue.client);
        leaving_.push_back(std::move(event.queue));
        policy_->ClientLeft(now, queue.client, decisions_);
        break;
      }
    }
    Apply(now);
  }
  if (!events.empty()) NoteShaped();
}

void Dispatcher::NoteShaped() {
  if (!uses_transformed_forms_) return;
  for (ClientQueue* queue : clients_) {
    const bool shaped = policy_->WaitsForForms(queue->client);
    if (shaped && !queue->shaped.load(std::memory_order_relaxed)) {
      // Its queued kernels will run shaped: their forms are made from now on, in queue order.
      std::lock_guard lock(mutex_);
      for (const QueuedCommand& command : queue->commands) {
        if (command.kernel != nullptr) RequestForms(*command.kernel);
      }
    }
    queue->shaped.store(shaped, std::memory_order_relaxed);
  }
}

void Dispatcher::FinishLeaving() {
  bool any = false;
  std::erase_if(leaving_, [&](const std::shared_ptr<ClientQueue>& queue) {
    if (runs_->HasRuns(queue->client)) return false;
    queue->started.reset();
    std::lock_guard lock(mutex_);
    queue->gone = true;
    any = true;
    return true;
  });
  if (any) gone_.notify_all();
}

void Dispatcher::PollRuns(Time now) {
  if (runs_->empty()) return;
  ended_.clear();
  runs_->Poll(ended_);
  if (!ended_.empty()) activity_ = true;
  // The policy hears of them in the order they ended, each at its end where its events timed it.
  std::stable_sort(ended_.begin(), ended_.end(), [&](const EndedRun& a, const EndedRun& b) {
    return a.ended_at.value_or(now) < b.ended_at.value_or(now);
  });
  for (EndedRun& ended : ended_) EndRun(now, ended);
}

void Dispatcher::EndRun(Time now, EndedRun& ended) {
  ClientQueue* queue = Find(ended.client);
  if (queue == nullptr) return;  // left meanwhile
  if (ended.result != CUDA_SUCCESS) DeferError(*queue, ended.result, std::move(ended.what));
  if (ended.end.form != scheduler::FormKind::kOriginal && ended.end.finished) {
    queue->started.reset();
    Consume(*queue, CUDA_SUCCESS, {});
  }
  decisions_.Clear();
  // Never earlier than what the policy was told before: its clock does not go back.
  told_ = std::max(told_, std::min(ended.ended_at.value_or(now), now));
  policy_->RunEnded(told_, ended.client, ended.end, decisions_);
  NoteMeasuredSlowdown(*queue);
  Apply(now);
}

void Dispatcher::NoteMeasuredSlowdown(ClientQueue& queue) {
  queue.measured_slowdown.store(policy_->MeasuredSlowdown(queue.client).value_or(-1),
                                std::memory_order_relaxed);
}

void Dispatcher::AnnounceHeads(Time now) {
  throttled_ = false;
  alone_waiting_ = false;
  forms_deadline_.reset();
  for (size_t i = 0; i < clients_.size(); ++i) {
    ClientQueue& queue = *clients_[i];
    if (queue.head_announced && queue.head_forms_pending) UpdateHeadForms(queue, now);
    // A head issued at once is consumed, and the next one is announced in this same loop.
    while (!queue.head_announced) {
      if (Throttled(queue)) {
        throttled_ = true;
        break;
      }
      const QueuedCommand* front = nullptr;
      {
        std::lock_guard lock(mutex_);
        if (!queue.commands.empty()) front = &queue.commands.front();
      }
      if (front == nullptr) break;
      if (front->kernel != nullptr && front->kernel->unfenced && !queue.alone) {
        if (AdmitAlone(queue, *front->kernel, now)) continue;  // announced in the next pass
        if (queue.alone_waiting_since) break;
        continue;  // refused and consumed: the next head
      }
      const FormsWait wait =
          front->kernel != nullptr ? WaitForForms(queue, *front->kernel, now) : FormsWait::kNone;
      if (wait == FormsWait::kHeld) break;
      queue.head_announced = true;
      queue.announced_at = now;
      queue.head_forms_pending = wait == FormsWait::kUnwanted;
      const RunOwner owner = OwnerOf(queue);
      scheduler::Head head =
          front->kernel ? scheduler::Head::Kernel(runs_->DescribeHead(owner, *front->kernel))
                        : scheduler::Head::Other();
      head.kernel.forms_pending = queue.head_forms_pending;
      decisions_.Clear();
      policy_->HeadArrived(now, queue.client, head, decisions_);
      Apply(now);
    }
  }
}

void Dispatcher::UpdateHeadForms(ClientQueue& queue, Time now) {
  const QueuedCommand* front = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!queue.commands.empty()) front = &queue.commands.front();
  }
  if (queue.started != nullptr || front == nullptr || front->kernel == nullptr) {
    queue.head_forms_pending = false;
    return;
  }
  const KernelLaunch& launch = *front->kernel;
  const FormsWait wait = WaitForForms(queue, launch, now);
  if (wait == FormsWait::kHeld || wait == FormsWait::kUnwanted) return;
  queue.head_forms_pending = false;
  decisions_.Clear();
  policy_->HeadUpdated(now, queue.client,
                       scheduler::Head::Kernel(runs_->DescribeHead(OwnerOf(queue), launch)),
                       decisions_);
  Apply(now);
}

Dispatcher::FormsWait Dispatcher::WaitForForms(ClientQueue& queue, const KernelLaunch& launch,
                                               Time now) {
  // A vendor library call has no kernel, and a kernel without pending forms has all it gets.
  if (!FormsToMake(launch)) {
    queue.forms_wait_since.reset();
    return FormsWait::kNone;
  }
  if (!policy_->WaitsForForms(queue.client)) {
    queue.forms_wait_since.reset();
    return FormsWait::kUnwanted;
  }
  if (!queue.forms_wait_since) {
    queue.forms_wait_since = now;
    launch.module->NoteFormsWaited();
  }
  const Time until = *queue.forms_wait_since + forms_wait_;
  if (now >= until) {
    TALLY_LOG_WARN(
        "{}: its transformed forms were not made within {} ms: it is scheduled "
        "without them",
        DescribeLaunch(launch),
        std::chrono::duration_cast<std::chrono::milliseconds>(forms_wait_).count());
    queue.forms_wait_since.reset();
    return FormsWait::kGivenUp;
  }
  // The first request when the kernel reaches the head of a client that has just become shaped;
  // else asked again in case the worker's full queue refused an earlier one.
  RequestForms(launch);
  forms_deadline_ = std::min(forms_deadline_.value_or(Time::max()), until);
  return FormsWait::kHeld;
}

void Dispatcher::Apply(Time now) {
  // Issuing never calls the policy, so the actions stay put while they are carried out; ends of
  // runs that ended at their issue (failed, or ran unshaped) are told afterwards.
  std::vector<EndedRun> ended_now;
  for (const scheduler::Action& action : decisions_.actions()) {
    ClientQueue* queue = Find(action.client);
    if (queue == nullptr) continue;
    if (action.kind == scheduler::Action::Kind::kPreempt) {
      runs_->Preempt(action.client);
      continue;
    }
    activity_ = true;
    QueuedCommand* front = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!queue->commands.empty()) front = &queue->commands.front();
    }
    if (front == nullptr) continue;
    if (front->host != nullptr) {
      StartHostFunction(*queue, std::move(front->host));
      continue;
    }
    if (front->kernel == nullptr && queue->started == nullptr) {
      const CUresult result = Guarded(queue->client, front->work);
      NoteIssued(*queue, front->stream);
      Consume(*queue, result, {});
      continue;
    }
    const RunOwner owner = OwnerOf(*queue);
    const bool first = queue->started == nullptr;
    if (first) {
      const scheduler::Duration held = now - queue->announced_at;
      queue->stats.held_ns += static_cast<uint64_t>(held.count());
      owner.latencies->queue_delay.Add(held);
      owner.latencies->request_to_issue.Add(now - front->kernel->received);
      if (action.risky) ++queue->stats.risky;
    }
    if (first && action.form.kind == scheduler::FormKind::kOriginal) {
      const CUresult result = Guarded(queue->client, [&] {
        return runs_->IssueOriginal(owner, *front->kernel, action.notify);
      });
      std::string what = result != CUDA_SUCCESS ? DescribeLaunch(*front->kernel) : std::string();
      if (result == CUDA_SUCCESS) WatchEnd(action, front->kernel->stream);
      NoteIssued(*queue, front->kernel->stream);
      FollowAlone(*queue, *front->kernel);
      Consume(*queue, result, std::move(what));
      if (result != CUDA_SUCCESS && action.notify) {
        ended_now.push_back(
            {queue->client, {scheduler::FormKind::kOriginal, true, 0, 0}, {}, {}});
      }
      continue;
    }
    if (first && front->kernel->BehindHostFunction()) {
      // Transformed, it would hold the client's queue until it ran, but it cannot run before the
      // client's host function, which may be waiting for the client's other streams: it goes
      // to its stream in its original form, told to the policy as finished.
      // (EndRun consumes the head.)
      queue->started = std::move(front->kernel);
      const CUresult result = Guarded(
          queue->client, [&] { return runs_->IssueOriginal(owner, *queue->started, false); });
      if (result != CUDA_SUCCESS) DeferError(*queue, result, DescribeLaunch(*queue->started));
      NoteIssued(*queue, queue->started->stream);
      FollowAlone(*queue, *queue->started);
      ended_now.push_back({queue->client, {action.form.kind, true, 0, 0}, {}, {}});
      continue;
    }
    if (first) {
      queue->started = std::move(front->kernel);
      queue->started_form = action.form.kind;
    }
    const CUresult result = Guarded(queue->client, [&] {
      return runs_->IssueTransformed(owner, *queue->started, action.form);
    });
    FollowAlone(*queue, *queue->started);
    if (result == CUDA_SUCCESS) WatchEnd(action, queue->started->stream);
    if (result != CUDA_SUCCESS) {
      // Given up: reported now, and its end told to the policy as if it had finished.
      DeferError(*queue, result, DescribeLaunch(*queue->started));
      ended_now.push_back({queue->client, {queue->started_form, true, 0, 0}, {}, {}});
    }
  }
  if (decisions_.wake()) wake_ = std::min(wake_.value_or(Time::max()), *decisions_.wake());
  for (EndedRun& ended : ended_now) EndRun(now, ended);
}

void Dispatcher::StartHostFunction(ClientQueue& queue, std::unique_ptr<HostFunction> function) {
  const DriverApi& api = runs_->api();
  CUevent reached = nullptr;
  CUresult result = api.cuEventCreate(&reached, CU_EVENT_DISABLE_TIMING);
  if (result == CUDA_SUCCESS) result = api.cuEventRecord(reached, function->stream);
  if (result == CUDA_SUCCESS) {
    result = api.cuStreamWaitValue32(function->stream, function->gate.device,
                                     function->gate.generation, CU_STREAM_WAIT_VALUE_GEQ);
  }
  if (result != CUDA_SUCCESS) {
    if (reached != nullptr) api.cuEventDestroy(reached);
    function->gate.Open();
    Consume(queue, result, "a host function");
    return;
  }
  NoteIssued(queue, function->stream);
  host_functions_.push_back({queue.client, reached, std::move(function)});
  Consume(queue, CUDA_SUCCESS, {});
}

void Dispatcher::PollHostFunctions() {
  std::erase_if(host_functions_, [&](PendingHostFunction& pending) {
    const CUresult state = runs_->api().cuEventQuery(pending.reached);
    if (state == CUDA_ERROR_NOT_READY) return false;
    // cuLaunchHostFunc's functions are not called after an error in the context (CUDA Driver
    // API); cuStreamAddCallback's are, with the error.
    const HostFunction& function = *pending.function;
    const bool call =
        state == CUDA_SUCCESS ||
        function.message.kind == static_cast<uint32_t>(ipc::HostCallbackKind::kStreamCallback);
    if (call && absl::IsResourceExhausted(function.callbacks->TrySend(function, state))) {
      return false;  // the client's ring is full: the next poll tries again
    }
    if (!call) function.gate.Open();
    runs_->api().cuEventDestroy(pending.reached);
    activity_ = true;
    return true;
  });
}

void Dispatcher::DropHostFunctions(ClientId client) {
  std::erase_if(host_functions_, [&](PendingHostFunction& pending) {
    if (pending.client != client) return false;
    pending.function->gate.Open();
    runs_->api().cuEventDestroy(pending.reached);
    return true;
  });
}

void Dispatcher::NoteIssued(ClientQueue& queue, CUstream stream) {
  // Called before the command counts as issued: a client that synchronises with the stream
  // then also waits for the fence, so a query right after its synchronisation finds the stream
  // idle. A fence goes only on the stream just used, never later on an idle one.
  if (stream == nullptr) return;
  if (queue.unfenced.size() >= kMaxCountedStreams) queue.unfenced.clear();
  uint32_t& count = queue.unfenced[stream];
  if (++count < kFenceEvery) return;
  queue.unfenced.erase(stream);
  CUevent event = TakeFreeEvent();
  if (event == nullptr) return;  // an unfenced stretch only widens the window
  if (api_.cuEventRecord(event, stream) == CUDA_SUCCESS) {
    queue.fences.push_back(event);
  } else {
    free_fences_.push_back(event);
  }
}

bool Dispatcher::Throttled(ClientQueue& queue) {
  // A failed event counts as passed: the failure reaches the client by its own way.
  while (!queue.fences.empty() &&
         api_.cuEventQuery(queue.fences.front()) != CUDA_ERROR_NOT_READY) {
    free_fences_.push_back(queue.fences.front());
    queue.fences.pop_front();
  }
  return queue.fences.size() >= kMaxFences;
}

void Dispatcher::ReleaseFences(ClientQueue& queue) {
  // An event still pending on the device may be recorded again (CUDA Driver API, cuEventRecord).
  free_fences_.insert(free_fences_.end(), queue.fences.begin(), queue.fences.end());
  queue.fences.clear();
  queue.unfenced.clear();
}

CUevent Dispatcher::TakeFreeEvent() {
  CUevent event = nullptr;
  if (!free_fences_.empty()) {
    event = free_fences_.back();
    free_fences_.pop_back();
  } else if (api_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    return nullptr;
  }
  return event;
}

void Dispatcher::DestroyFreeFences() {
  for (CUevent event : free_fences_) api_.cuEventDestroy(event);
  free_fences_.clear();
}

void Dispatcher::Consume(ClientQueue& queue, CUresult result, std::string what) {
  queue.head_announced = false;
  EndAlone(queue);
  std::lock_guard lock(mutex_);
  if (queue.commands.empty()) return;  // cleared by the client's removal
  queue.commands.pop_front();
  ++queue.issued;
  if (queue.commands.size() + 1 == queue.max_queued) room_.notify_all();
  if (result != CUDA_SUCCESS) RecordFailure(queue, result, std::move(what));
  if (queue.issued >= queue.wake_at || queue.removed) {
    queue.wake_at = UINT64_MAX;
    issued_.notify_all();
  }
}

}  // namespace tally::server

namespace tally::server {

void Dispatcher::Wake() {
  {
    std::lock_guard lock(mutex_);
    pending_work_ = true;
  }
  work_.notify_one();
}

void Dispatcher::RecoverFromFault() {
  ContextFaults* faults = recovery_.faults;
  if (faults == nullptr) return;
  // A fault the dispatch thread saw, in a run's end or in the calls that issue one.
  faults->Observe(runs_->first_fault());
  if (!faults->faulted()) return;
  if (faults->AttributionPending()) {
    // The clients whose runs were on the device: those the fault ended and those not yet
    // polled (on NVIDIA's driver every run in flight reports the error).
    absl::flat_hash_set<ClientId> culprits;
    runs_->TakeFaultedClients(culprits);
    runs_->AddClientsOnDevice(culprits);
    faults->Attribute(culprits);
  }
  if (faults->ResetDue() && clients_.empty() && leaving_.empty() && runs_->empty() &&
      host_functions_.empty() && alone_ends_.empty()) {
    ResetContext();
  }
}

void Dispatcher::ResetContext() {
  // Every object of the old context goes before it does; none is used after.
  DestroyFreeFences();
  end_watcher_.reset();
  runs_.reset();
  absl::Status reset = recovery_.reset ? recovery_.reset() : absl::OkStatus();
  if (reset.ok()) {
    absl::StatusOr<std::unique_ptr<KernelRuns>> runs = KernelRuns::Create(backend_, profiler_);
    if (runs.ok()) {
      runs_ = *std::move(runs);
      end_watcher_ = MakeEndWatcher();
    } else {
      reset = runs.status();
    }
  }
  if (!reset.ok()) {
    // Without a context nothing can be served: the server must be restarted.
    TALLY_LOG_ERROR("tally-server: the device context could not be reset after its fault ({}); "
                    "restart tally-server",
                    reset.ToString());
    std::_Exit(EXIT_FAILURE);
  }
  recovery_.faults->Recovered();
}

}  // namespace tally::server

namespace tally::server {

bool Dispatcher::AdmitAlone(ClientQueue& queue, const KernelLaunch& launch, Time now) {
  if (unfenced_->TryAdmit(queue.client)) {
    queue.alone = true;
    queue.alone_waiting_since.reset();
    queue.stats.unfenced_waiting = 0;
    ++queue.stats.unfenced_alone;
    return true;
  }
  if (!queue.alone_waiting_since) {
    queue.alone_waiting_since = now;
    queue.stats.unfenced_waiting = 1;
  }
  if (now - *queue.alone_waiting_since < unfenced_->wait()) {
    alone_waiting_ = true;
    return false;
  }
  queue.alone_waiting_since.reset();
  queue.stats.unfenced_waiting = 0;
  ++queue.stats.unfenced_refused;
  Consume(queue, CUDA_ERROR_NOT_SUPPORTED,
          fmt::format("kernel {} (it cannot be fenced: {}; other clients held device memory for "
                      "the {} ms that tally-server --unfenceable alone waits for it to run alone)",
                      launch.kernel->signature.name, launch.kernel->fence_refusal,
                      unfenced_->wait().count()));
  return false;
}

void Dispatcher::FollowAlone(ClientQueue& queue, const KernelLaunch& launch) {
  if (!launch.unfenced) return;
  unfenced_->Extend(queue.client);
  CUevent event = TakeFreeEvent();
  if (event != nullptr && api_.cuEventRecord(event, launch.stream) == CUDA_SUCCESS) {
    alone_ends_.push_back({queue.client, event});
    return;
  }
  if (event != nullptr) free_fences_.push_back(event);
  // Without an event its end is unknown: the admission lasts until the client has left.
  TALLY_LOG_WARN(
      "client {}: the end of kernel {} cannot be followed; no other client gets "
      "device memory until it leaves",
      queue.client.value(), launch.kernel->signature.name);
}

void Dispatcher::PollAloneEnds() {
  // A failed event counts as passed: the kernel is no longer running either way.
  std::erase_if(alone_ends_, [&](const AloneEnd& end) {
    if (api_.cuEventQuery(end.event) == CUDA_ERROR_NOT_READY) return false;
    free_fences_.push_back(end.event);
    unfenced_->End(end.client);
    activity_ = true;
    return true;
  });
}

void Dispatcher::EndAlone(ClientQueue& queue) {
  if (!queue.alone) return;
  queue.alone = false;
  unfenced_->End(queue.client);
}

}  // namespace tally::server
