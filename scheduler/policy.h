// The scheduling policy interface. A policy is told of clients joining and leaving, priority
// changes, new queue heads, the ends of runs and the passage of time, and answers each event
// with actions (scheduler/types.h). Pure: no threads, clock or device of its own, so the same
// policy runs in tally-server's dispatcher, in the simulator and in tests with a fake clock
// (docs/scheduling.md, "One policy, three drivers").
//
// The driver's side of the contract:
// - Every client has one ordered command queue; HeadArrived announces each head once. A head
//   that is other work, or a kernel issued in its original form, is consumed by its kIssue; a
//   kernel issued in a transformed form is consumed when a RunEnded says `finished`. After a
//   head is consumed the client's next head (if any) is announced.
// - A kernel in a transformed form has at most one run in flight: the policy issues it again
//   (next slice, resumption) only after that run's RunEnded.
// - Actions are carried out in the order given; an action about a client that has left, a
//   kIssue without a head, or a kPreempt without a running PTB kernel is ignored.
// - Woken is called at or after the time of the earliest WakeAt still pending.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/slowdown_budget.h"
#include "scheduler/form_advisor.h"
#include "scheduler/types.h"

namespace tally::scheduler {

class Policy {
 public:
  virtual ~Policy() = default;

  virtual void ClientJoined(Time now, ClientId client, ClientPriority priority,
                            Decisions& out) = 0;
  // Nothing more of the client is issued; its running PTB kernel (if any) is preempted by the
  // driver and never resumed.
  virtual void ClientLeft(Time now, ClientId client, Decisions& out) = 0;
  // Effective at this decision.
  virtual void PriorityChanged(Time now, ClientId client, ClientPriority priority,
                               Decisions& out) = 0;
  virtual void HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) = 0;
  virtual void RunEnded(Time now, ClientId client, const RunEnd& end, Decisions& out) = 0;
  virtual void Woken(Time now, Decisions& out) = 0;
  // The client's slowdown budget (its own, or the server's default), told after ClientJoined
  // and at each change; effective at once. Only `priority-budget` has budgets.
  virtual void BudgetChanged(Time, ClientId, const SlowdownBudget&, Decisions&) {}
  // The client's latest measured slowdown at its budget's percentile (0.12: 12% longer than
  // alone); none while unmeasured, and for policies without budgets.
  virtual std::optional<double> MeasuredSlowdown(ClientId) const { return std::nullopt; }

  // Whether the policy may issue transformed forms: only then does the server build them.
  virtual bool UsesTransformedForms() const = 0;
  // Whether the client's kernels would run in a transformed form now (pure: a query of the
  // policy's state). The driver has a kernel's forms made only once this is true of a client
  // launching it, and a kernel of such a client whose forms are not made yet waits for them
  // before it is announced (the driver holds it, for a bounded time) rather than being decided
  // on as a kernel that has none (KernelInfo's sliceable and preemptible false). A kernel that
  // would run in its original form anyway never waits, and its forms are not made.
  virtual bool WaitsForForms(ClientId) const { return false; }
  // The announced head of `client`, announced with KernelInfo::forms_pending and not issued yet,
  // as it is now that its forms are made (or were given up: forms_pending false either way).
  // Only a policy that can see such a head (it announced kernels of a client whose kernels it
  // ran unshaped, then shapes them) needs it.
  virtual void HeadUpdated(Time, ClientId, const Head&, Decisions&) {}
};

// Settings of the policies that hold background work (SCHEDULING.md, "hold, shape, preempt").
struct PriorityOptions {
  // A lower level's kernel is issued only after every higher level has been idle this long.
  Duration min_idle = std::chrono::microseconds(100);
  // A background kernel that cannot be made preemptible and is not known to be short waits
  // for this much idleness of every higher level, then runs in its original form anyway.
  Duration long_idle = std::chrono::milliseconds(100);
  // Clients below this level run their kernels in the advisor's form even when no more
  // important client is connected: a latency-critical client that connects later then finds
  // their work preemptible instead of original kernels already on the device, at the cost of
  // the transformed forms' speed while they are alone. By default no level is: a client with
  // no more important client connected runs at full speed, untransformed, and shaping starts
  // when a more important client connects (tally-server --shape-alone sets kHighLevel).
  int32_t always_shape_below = kShapeNoLevelAlone;
  static constexpr int32_t kShapeNoLevelAlone = std::numeric_limits<int32_t>::min();
  // A client below high with no more important client connected runs unshaped, but with at most
  // this many original kernels on the device at once (the second keeps the device busy while
  // the server learns of the first's end): a latency-critical client that connects then waits
  // for those alone, not for a whole queue of long kernels already on the device.
  uint32_t unshaped_in_flight = 2;
};

// Settings of `priority-budget`: how much slower than alone the foreground's kernels may run
// because background work runs beside them, for clients that have no budget of their own.
using BudgetOptions = SlowdownBudget;

// Every head issued as soon as it arrives, in its original form, whatever its client's
// priority: the device alone orders the work (first come, first served).
std::unique_ptr<Policy> MakeFifoPolicy();

// Validation mode (tally-server --validate): FIFO, and every kernel that has `form` runs in
// it; with `preempt`, PTB kernels are preempted after random delays (seeded, so that a failing
// run repeats) and resumed, at most kMaxValidationPreemptions times per launch.
inline constexpr int kMaxValidationPreemptions = 3;
std::unique_ptr<Policy> MakeValidationPolicy(LaunchForm form, bool preempt);

// Tally's policy: the most important connected clients issue at once in original form; less
// important ones only after min_idle of idleness above them, in the form `advisor` chooses,
// preempted when more important work arrives. `advisor` must outlive the policy.
std::unique_ptr<Policy> MakePriorityPolicy(const PriorityOptions& options, FormAdvisor& advisor);

// `priority`, except that a background kernel whose time alone is known (FormChoice::original_time)
// runs unshaped when that time fits the budget: in idle time within a typical period's
// allowance, beside the foreground within what is left of the current period's; one that does not
// fit runs in slices sized the same way (LaunchForm::Slice: whole waves, at least one in idle
// time, held beside the foreground while not even one fits); and that while
// the foreground has work, background kernels not yet timed may run beside it as PTB kernels with
// a bounded number of workers (started so, or resumed so after a preemption, and widened again
// once the foreground is idle). Each foreground client has a bound of its own,
// judged per busy period (a request, as the server sees it): grown while the periods' measured
// slowdown (at its budget's percentile) is within its budget, halved when over, and zero (running
// ones preempted) for the rest of a period whose extra time passes a typical period's budget;
// the background runs within the smallest bound of the foreground clients. A client without a
// budget of its own (BudgetChanged) has `budget`. `advisor` must outlive the policy.
std::unique_ptr<Policy> MakePriorityBudgetPolicy(const PriorityOptions& options,
                                                 const BudgetOptions& budget, FormAdvisor& advisor);

// The same holding, without transformations: background kernels in their original form, so
// they cannot be preempted (the baseline that shows what the transformations buy).
std::unique_ptr<Policy> MakePriorityNoTransformPolicy(const PriorityOptions& options);

// Settings of time slicing: one client's work on the device at a time, round robin.
struct TimeSliceOptions {
  // How long a client keeps the device while others wait. A switch also waits for the kernels
  // already issued to end: nothing of the baselines can stop a kernel once it runs.
  Duration slice = std::chrono::milliseconds(2);
  // Kernels of the client holding the device issued at once: two hide the completion latency
  // between consecutive kernels; more would let the slice overrun by more kernels.
  uint32_t max_in_flight = 2;
};

// Settings of the TGS baseline (scheduler/policies/tgs.cc).
struct TgsOptions {
  // How often the foreground's launch rate is sampled and the background's budget adapted. TGS
  // samples every 5 s; simulated runs last tens of seconds, so the default is shorter.
  Duration sample_period = std::chrono::seconds(1);
  // The background's launches are counted against the budget per this period (TGS's 50 ms).
  Duration budget_period = std::chrono::milliseconds(50);
};

// Every kernel issued as it arrives, in its original form; with `priority_streams`, kernels of
// the most important connected clients go on high-priority streams (Action::foreground), so
// the device's block scheduler serves their blocks first (MPS with CUDA stream priorities).
std::unique_ptr<Policy> MakeMpsPolicy(bool priority_streams);

// Round robin over the clients with work, one at a time, each for `options.slice`.
std::unique_ptr<Policy> MakeTimeSlicePolicy(const TimeSliceOptions& options);

// After TGS (Wu et al., NSDI'23): the most important clients issue at once on high-priority
// streams; the others' launches are rate-limited by a budget that grows while the foreground's
// launch rate holds and shrinks when it drops.
std::unique_ptr<Policy> MakeTgsPolicy(const TgsOptions& options);

// What the named policies are made with.
struct PolicyConfig {
  PriorityOptions priority;
  TimeSliceOptions time_slice = {};  // "= {}": callers may leave it out of designated initializers
  TgsOptions tgs = {};
  BudgetOptions budget = {};
  FormAdvisor* advisor = nullptr;  // for the policies that shape kernels; outlives the policy
};

// The policy called `name` (tally-server --policy); InvalidArgument naming the choices for
// an unknown name.
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                   const PolicyConfig& config);
// The names MakePolicy knows, each with a line for --help.
struct PolicyDescription {
  std::string_view name;
  std::string_view summary;
  bool takes_budgets = false;  // spends clients' slowdown budgets (Policy::BudgetChanged)
};
std::span<const PolicyDescription> PolicyDescriptions();
// Whether the policy called `name` spends slowdown budgets; false for an unknown name.
bool TakesBudgets(std::string_view name);

}  // namespace tally::scheduler
