// Per-client ordered command queues and the one thread that issues their commands to the
// device as the scheduling policy decides (docs/scheduling.md). The dispatch thread tells
// the policy of clients, priorities, new queue heads, the ends of kernel runs (server/
// kernel_runs.h, polled without blocking) and the passage of time, and carries out its
// actions: issue a head in a form, preempt a running PTB kernel. Order within a client is never
// changed. A kernel in a transformed form holds its client's queue until it has finished (all
// slices, every resumption), so later work of the client never overtakes it.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/client_priority.h"
#include "common/slowdown_budget.h"
#include "common/strong_id.h"
#include "profiler/profiler.h"
#include "scheduler/policy.h"
#include "server/backend/backend.h"
#include "server/busy_time.h"
#include "server/context_faults.h"
#include "server/host_callbacks.h"
#include "server/kernel_forms.h"
#include "server/kernel_runs.h"
#include "server/run_end_watcher.h"
#include "server/scheduling_stats.h"
#include "server/unfenced_gate.h"

namespace tally::server {

// Issues one piece of stream-ordered work other than a kernel (a copy, memset, event record,
// host function) to the backend; returns what the driver returned.
using Command = std::function<CUresult()>;

// One entry of a client's queue: other work, a kernel launch, or a host function.
struct QueuedCommand {
  Command work;
  std::unique_ptr<KernelLaunch> kernel;
  std::unique_ptr<HostFunction> host;
  CUstream stream = nullptr;  // where `work` runs (null: nowhere on the device)
};

// The first failure of a client's asynchronous work since its last synchronising call.
struct DeferredError {
  CUresult result = CUDA_SUCCESS;
  std::string what;  // the failed work ("kernel K<<<...>>>", "LaunchKernel: ..."); may be empty
};

// What the dispatch thread needs to recover from a fault of the shared context
// (context_faults.h); empty where the backend keeps faults to the client.
struct ContextRecovery {
  ContextFaults* faults = nullptr;
  std::function<absl::Status()> reset;  // Backend::ResetContext
};

class Dispatcher {
 public:
  struct ClientQueue;

  // `profiler` (may be null) is told what runs measured and must outlive the dispatcher;
  // `thread_setup` runs first on the dispatch thread (making the device context current).
  // Runs on the device are polled every few microseconds at first, backing off to
  // `max_poll` while none ends.
  // With `recovery` (a backend whose faults poison the shared context), the dispatch thread
  // attributes such a fault and, once no client of the faulted context is left, resets the
  // context and starts over with new kernel runs.
  // With `unfenced` (--unfenceable alone; must outlive the dispatcher), a launch marked
  // KernelLaunch::unfenced is told to the policy only once the gate admits its client, and the
  // admission lasts until the kernel has ended on the device; a launch not admitted within the
  // gate's wait fails with CUDA_ERROR_NOT_SUPPORTED.
  // A kernel's transformed forms are made (by the background worker, SharedModule::RequestForms)
  // only once the policy would run its client's kernels shaped (Policy::WaitsForForms): its
  // launches are then requested as they are queued, and those already queued when the client
  // became shaped. A kernel whose forms are not made yet (Kernel::forms_pending) is held at its
  // queue's head, unannounced, while the policy shapes its client, for at most `forms_wait`;
  // then, or as soon as the policy no longer shapes the client, it is announced as a kernel
  // without transformed forms. A head announced while its client ran unshaped is waited for in
  // the same way once the client is shaped (UpdateHeadForms). Wake the dispatcher when forms
  // are made (ModuleRegistry::SetFormsDone).
  static constexpr scheduler::Duration kFormsWait = std::chrono::seconds(10);
  static absl::StatusOr<std::unique_ptr<Dispatcher>> Create(
      const Backend& backend, std::unique_ptr<scheduler::Policy> policy,
      profiler::Profiler* profiler, scheduler::Duration max_poll,
      std::function<void()> thread_setup, ContextRecovery recovery = {},
      UnfencedGate* unfenced = nullptr, scheduler::Duration forms_wait = kFormsWait);
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;
  // Stop, then frees what the device used (sessions are closed first).
  ~Dispatcher();
  // Stops the thread; commands still queued are dropped. The object stays usable for waits.
  void Stop();

  // `max_queued`: the commands the client's queue holds before HasRoom says no.
  std::shared_ptr<ClientQueue> AddClient(ClientId client, ClientPriority priority,
                                         size_t max_queued = SIZE_MAX);
  // Discards the client's queued commands, stops its running PTB kernel, and returns once
  // nothing of it is being issued and none of its kernel runs is on the device any more, or at
  // `deadline` (false then: a run still uses the client's memory); WaitIssued on the queue
  // returns from the start of the call on.
  bool RemoveClient(ClientQueue& queue, std::chrono::steady_clock::time_point deadline =
                                            std::chrono::steady_clock::time_point::max());
  // Makes the dispatch thread look at the context's faults and the heads held for their
  // forms soon (any thread, no lock held).
  void Wake();
  // The dispatch thread's heartbeat (a service watchdog's): when its latest round began, and a
  // bound on how long it sleeps between rounds with nothing to do (none: until work arrives).
  std::chrono::steady_clock::time_point last_round() const;
  void KeepRounding(std::chrono::nanoseconds at_most);
  // Effective at the policy's next decision.
  void SetPriority(ClientQueue& queue, ClientPriority priority);
  ClientPriority priority(ClientQueue& queue);
  // The client's slowdown budget (the policy hears of it after the client's join, and at each
  // change): effective at the policy's next decision.
  void SetBudget(ClientQueue& queue, const SlowdownBudget& budget);
  SlowdownBudget budget(ClientQueue& queue);
  // The policy's latest measured slowdown of the client at its budget's percentile (any
  // thread); none while unmeasured.
  std::optional<double> measured_slowdown(ClientQueue& queue) const;

  void Enqueue(ClientQueue& queue, Command command);
  void EnqueueKernel(ClientQueue& queue, KernelLaunch launch);
  // Appends `commands` in their order under one lock and one wake-up (a session's one-way work,
  // session.h) and leaves `commands` empty, its capacity kept for the next batch. The queue's
  // bound is the caller's to keep (HasRoom): a batch is never refused.
  void Enqueue(ClientQueue& queue, std::vector<QueuedCommand>& commands);
  // Whether the client's queue holds fewer than its `max_queued` commands (or was removed).
  bool HasRoom(ClientQueue& queue);
  // Waits until HasRoom or `deadline`.
  void WaitForRoom(ClientQueue& queue, std::chrono::steady_clock::time_point deadline);
  // How many commands were ever enqueued for `queue`: WaitIssued(queue, Ticket(queue)) waits for
  // everything enqueued so far, and not for what other threads enqueue later.
  uint64_t Ticket(ClientQueue& queue);
  // Waits until the first `ticket` commands of `queue` have been issued to the backend (a
  // kernel in a transformed form: until it has finished), or the client was removed.
  void WaitIssued(ClientQueue& queue, uint64_t ticket);
  // Whether WaitIssued(queue, ticket) would return at once.
  bool Issued(ClientQueue& queue, uint64_t ticket);
  // The first failure of an issued command since the last call (CUDA_SUCCESS when none): how
  // asynchronous errors reach the client's next synchronising call, as in CUDA.
  DeferredError TakeDeferredError(ClientQueue& queue);
  // Records the failure of work, named by `what`, for TakeDeferredError. The first failure is
  // logged.
  void DeferError(ClientQueue& queue, CUresult result, std::string what);
  size_t queued(ClientQueue& queue);
  // The client's counters (any thread).
  const SchedulingStats& stats(ClientQueue& queue);
  // Any thread.
  const ClassLatencyHistograms& latencies(ipc::PriorityClass c) const;
  // Any thread: the time during which a run of a client above best-effort was on the device
  // since the dispatcher started (each such run is followed to its end with an event).
  uint64_t HighBusyNs() const { return high_busy_.TotalNs(BusyTime::Now()); }
  bool UsesTransformedForms() const { return uses_transformed_forms_; }

 private:
  Dispatcher(const Backend& backend, std::unique_ptr<scheduler::Policy> policy,
             profiler::Profiler* profiler, std::unique_ptr<KernelRuns> runs,
             scheduler::Duration max_poll, std::function<void()> thread_setup,
             ContextRecovery recovery, UnfencedGate* unfenced, scheduler::Duration forms_wait);

  // mutex_ held.
  void RecordFailure(ClientQueue& queue, CUresult result, std::string what);
  // The entry of queues_ that owns `queue` (end() once it has left).
  std::vector<std::shared_ptr<ClientQueue>>::iterator Owner(const ClientQueue& queue);
  void DispatchLoop();
  std::unique_ptr<RunEndWatcher> MakeEndWatcher();
  // After `action` issued a run on `stream`: has its end watched if the policy waits for it.
  void WatchEnd(const scheduler::Action& action, CUstream stream);

  // Dispatch thread only, without mutex_.
  // The device window: after every kFenceEvery commands issued on one of a client's streams an
  // event (a fence) is recorded behind the last of them; a client with kMaxFences fences pending
  // on the device is not given the policy's attention until some complete. So a client's issued
  // work on the device stays bounded (as its queue is), and issuing never blocks on a full
  // device queue.
  void NoteIssued(ClientQueue& queue, CUstream stream);
  bool Throttled(ClientQueue& queue);
  void ReleaseFences(ClientQueue& queue);
  void DestroyFreeFences();
  // An event without timing, from free_fences_ or new; null when none can be made.
  CUevent TakeFreeEvent();
  // --unfenceable alone, for the queue's head, an unfenced kernel: admits it (true), or it
  // waits, or it has waited past the gate's wait and is consumed as refused (false both).
  bool AdmitAlone(ClientQueue& queue, const KernelLaunch& launch, scheduler::Time now);
  // After a run of an unfenced kernel was issued: its end keeps the client admitted.
  void FollowAlone(ClientQueue& queue, const KernelLaunch& launch);
  void PollAloneEnds();
  // The queue's admitted head is gone (issued in its original form, finished, or dropped).
  void EndAlone(ClientQueue& queue);
  scheduler::Time Now() const;
  // The owner of the queue's runs, with its class's latency histograms (dispatch thread).
  RunOwner OwnerOf(ClientQueue& queue);
  void HandleControl(scheduler::Time now);
  void PollRuns(scheduler::Time now);
  void AnnounceHeads(scheduler::Time now);
  // Where the queue's head kernel stands with its transformed forms: nothing to make; to make,
  // but its client runs unshaped now; held this round, waiting for them (they are requested);
  // waited for `forms_wait` in vain (the log says so): scheduled without them.
  enum class FormsWait : uint8_t { kNone, kUnwanted, kHeld, kGivenUp };
  FormsWait WaitForForms(ClientQueue& queue, const KernelLaunch& launch, scheduler::Time now);
  // A head announced with its forms to make (its client ran unshaped): once the client is
  // shaped they are requested and waited for like an unannounced head's, and the policy is told
  // the head anew (Policy::HeadUpdated) when they are made or given up.
  void UpdateHeadForms(ClientQueue& queue, scheduler::Time now);
  // After control events: notes which clients the policy shapes now, and requests the forms of
  // the queued kernels of those it did not shape before.
  void NoteShaped();
  void Apply(scheduler::Time now);
  // A host function at the head: an event and the wait on its gate go on its stream, the head
  // is consumed, and once the event completed (PollHostFunctions) the client is asked to run it.
  void StartHostFunction(ClientQueue& queue, std::unique_ptr<HostFunction> function);
  void PollHostFunctions();
  // Opens the gates of the client's host functions not yet sent (it left).
  void DropHostFunctions(ClientId client);
  // The head command is done: it leaves the queue and waiters may go on.
  void Consume(ClientQueue& queue, CUresult result, std::string what);
  // Tells the policy of a run's end (the head is consumed first when the kernel finished).
  void EndRun(scheduler::Time now, EndedRun& ended);
  // Keeps the policy's measured slowdown of the client for the status (after each event that
  // may change it).
  void NoteMeasuredSlowdown(ClientQueue& queue);
  void FinishLeaving();
  // A fault of the shared context: attributes it, and resets the context once it may.
  void RecoverFromFault();
  void ResetContext();
  ClientQueue* Find(ClientId client);

  const Backend& backend_;
  const DriverApi& api_;
  profiler::Profiler* const profiler_;
  const ContextRecovery recovery_;
  std::unique_ptr<scheduler::Policy> policy_;
  const bool uses_transformed_forms_;
  std::unique_ptr<KernelRuns> runs_;
  scheduler::Decisions decisions_;
  std::array<ClassLatencyHistograms, ipc::kPriorityClassCount> latencies_;
  BusyTime high_busy_;                   // outlives the kernel runs of a context reset
  std::optional<scheduler::Time> wake_;  // the policy's earliest pending WakeAt
  // The latest time the policy was told: the ends of runs go to it at their device times
  // (EndedRun::ended_at), which may precede the round's.
  scheduler::Time told_{scheduler::Time::min()};
  std::vector<ClientQueue*> clients_;     // joined, not yet left (dispatch thread's view)
  std::vector<std::shared_ptr<ClientQueue>> leaving_;  // left; their runs are still on the device
  std::vector<EndedRun> ended_;           // reused by PollRuns
  const scheduler::Duration max_poll_;
  const scheduler::Duration forms_wait_;
  // The earliest end of a hold for forms (AnnounceHeads): the dispatch thread wakes then.
  std::optional<scheduler::Time> forms_deadline_;
  scheduler::Duration poll_interval_;
  bool activity_ = false;  // something was issued or ended: poll soon again
  std::atomic<int64_t> last_round_ns_{0};     // steady clock
  std::atomic<int64_t> round_at_least_ns_{0};  // 0: no bound
  // Host functions issued, whose client has not been asked yet.
  struct PendingHostFunction {
    ClientId client;
    CUevent reached = nullptr;  // recorded where the function stands on its stream
    std::unique_ptr<HostFunction> function;
  };
  std::vector<PendingHostFunction> host_functions_;
  bool throttled_ = false;  // a client waits for its fences: poll soon again
  std::vector<CUevent> free_fences_;
  UnfencedGate* const unfenced_;
  // Events behind runs of unfenced kernels on the device, each holding an admission.
  struct AloneEnd {
    ClientId client;
    CUevent event = nullptr;
  };
  std::vector<AloneEnd> alone_ends_;
  bool alone_waiting_ = false;  // a head waits to run alone: poll soon again

  std::mutex mutex_;
  std::condition_variable work_;    // dispatch thread: commands or control events arrived
  std::condition_variable issued_;  // waiters: the command they wait for was issued
  std::condition_variable gone_;    // RemoveClient: the client's runs have ended
  std::condition_variable room_;    // WaitForRoom: a queue at its bound lost a command
  std::vector<std::shared_ptr<ClientQueue>> queues_;
  // Joins, leaves and priority changes, for the dispatch thread (mutex_).
  struct Control {
    enum class Kind : uint8_t { kJoin, kLeave, kPriority, kBudget } kind;
    std::shared_ptr<ClientQueue> queue;
    ClientPriority priority;
    SlowdownBudget budget = {};  // kBudget
  };
  std::vector<Control> control_;
  bool pending_work_ = false;  // commands arrived since the dispatch thread last looked
  bool stopping_ = false;
  const std::function<void()> thread_setup_;  // the dispatch thread's and the end watcher's
  // Wakes this thread at the end of a background run (Apply); made anew with the context, and
  // destroyed before mutex_ and work_, which its thread's wake uses.
  std::unique_ptr<RunEndWatcher> end_watcher_;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace tally::server
