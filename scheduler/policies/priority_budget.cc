// `priority-budget`: Tally's hold, shape, preempt (internal/holding_policy.h), except that a
// background kernel whose time alone fits the budget runs unshaped (RunsOriginal below), one whose
// time alone is known but does not fit runs in slices sized to the budget (SliceBlocks), and that
// while the foreground has work, background kernels not yet timed may run beside it as PTB
// kernels of a bounded number of workers; the allowance comes from the foreground's busy periods'
// times alone, the bound follows their measured slowdown (internal/slowdown_budget.h). Each
// foreground client has its own budget and bound; the background runs within the smallest of
// them, so a client with a budget of 0 is served as `priority` serves it.
//
// A foreground kernel's duration is measured from the policy's own events: from its issue (or
// its predecessor's reported end, if later: one client's kernels run in order) to its reported
// end. It ran "beside" background work if any ran at any decision in between. A client's busy
// period ends when none of its kernels is on the device and none is issued for min_idle (the
// idleness after which `priority` lets the background run): it is judged when its next kernel
// is issued.
#include <algorithm>
#include <deque>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "scheduler/internal/holding_policy.h"
#include "scheduler/internal/slowdown_budget.h"

namespace tally::scheduler {
namespace {

class PriorityBudgetPolicy final : public internal::HoldingPolicy {
 public:
  PriorityBudgetPolicy(const PriorityOptions& options, const BudgetOptions& budget,
                       FormAdvisor& advisor)
      : HoldingPolicy(options),
        advisor_(advisor),
        default_budget_(budget),
        min_idle_(options.min_idle) {}
  bool UsesTransformedForms() const override { return true; }

  void ClientLeft(Time now, ClientId client, Decisions& out) override {
    foreground_.erase(client);
    budgets_.erase(client);
    HoldingPolicy::ClientLeft(now, client, out);
  }
  void PriorityChanged(Time now, ClientId client, ClientPriority priority,
                       Decisions& out) override {
    foreground_.erase(client);  // tracked again from its next kernel if still in the foreground
    HoldingPolicy::PriorityChanged(now, client, priority, out);
  }
  void BudgetChanged(Time now, ClientId client, const SlowdownBudget& budget,
                     Decisions& out) override {
    budgets_[client] = budget;
    if (auto it = foreground_.find(client); it != foreground_.end()) {
      it->second.budget.SetBudget(budget.slowdown, budget.percentile);
    }
    // Effective at once (Policy::BudgetChanged): what runs beside the foreground beyond the new
    // bound is preempted now, not at the next event, which may be far off.
    Woken(now, out);
  }
  std::optional<double> MeasuredSlowdown(ClientId client) const override {
    auto it = foreground_.find(client);
    return it == foreground_.end() ? std::nullopt : it->second.budget.measured();
  }

 private:
  struct Run {
    KernelShape shape;
    Time issued;
    bool beside = false;
  };
  struct Foreground {
    internal::SlowdownBudget budget;
    std::deque<Run> running;  // in issue order, which is the order they end in
    Time last_end = Time::min();
    // The expected end of background work issued beside while no kernel of the client was on
    // the device (Spend).
    Time idle_work_until = Time::min();
  };

  FormChoice BackgroundForm(const KernelInfo& kernel) override {
    FormChoice choice = advisor_.Choose(kernel);
    if (choice.original_time) timed_.insert(kernel.shape);
    return choice;
  }
  // A background kernel whose time alone is known runs unshaped (no PTB or slicing cost, nothing
  // to preempt: it ends by itself) when that time fits the budget: while the foreground is idle,
  // within every foreground client's allowance (a request that arrives meanwhile waits for at
  // most about that); beside a busy period, within what is left of each one's allowance (Spend).
  bool RunsOriginal(Time now, const KernelInfo&, const FormChoice& choice, bool beside) override {
    if (!choice.original_time || foreground_.empty()) return false;
    const Duration time = *choice.original_time;
    const Duration allowed = Allowed(beside);
    if (allowed <= Duration::zero() || time > allowed) return false;
    Spend(now, time, beside);
    return true;
  }
  bool MayRunOriginalBeside() const override {
    return !foreground_.empty() &&
           std::all_of(foreground_.begin(), foreground_.end(), [](const auto& entry) {
             return entry.second.budget.Left() > Duration::zero();
           });
  }
  // A timed kernel that does not fit runs in slices: ordinary blocks on the background's stream,
  // which the device serves after the foreground's (as an unshaped kernel's) and which end by
  // themselves, each slice sized to the budget as RunsOriginal sizes a whole kernel. Sized in
  // whole waves (KernelInfo::Waves): a wave takes the kernel's time alone over its waves, and a
  // slice of fewer blocks than a wave still takes a wave's time.
  uint32_t SliceBlocks(Time now, const KernelInfo& kernel, Duration time_alone, uint64_t remaining,
                       bool beside) override {
    if (foreground_.empty()) return 0;
    const uint64_t slots = kernel.WaveBlocks();
    const uint64_t grid = kernel.shape.grid.Count();
    if (slots == 0 || remaining == 0 || time_alone <= Duration::zero()) return 0;
    const Duration wave = time_alone / static_cast<Duration::rep>(kernel.Waves(grid));
    const Duration allowed = Allowed(beside);
    uint64_t waves = wave > Duration::zero() ? static_cast<uint64_t>(allowed / wave) : 1;
    if (waves == 0) {
      // In idle time a kernel started in slices goes on, a wave at a time; none is started so
      // without an allowance (a budget of 0 is `priority`).
      if (beside || remaining == grid) return 0;
      waves = 1;
    }
    const uint64_t blocks = std::min({remaining, waves * slots, uint64_t{UINT32_MAX}});
    Spend(now, wave * static_cast<Duration::rep>(kernel.Waves(blocks)), beside);
    return static_cast<uint32_t>(blocks);
  }
  // What background work issued now may take alone: within every foreground client's
  // allowance while the foreground is idle, within what is left of it beside.
  Duration Allowed(bool beside) const {
    Duration allowed = Duration::max();
    for (const auto& [id, fg] : foreground_) {
      const Duration own = beside ? fg.budget.Left() : fg.budget.Allowance();
      allowed = std::min(allowed, std::max(own, Duration::zero()));
    }
    return allowed;
  }
  // Background work `time_alone` long, issued beside: a client with kernels on the device has it
  // committed to its period at once; one that has just gone idle only at its next kernel, for
  // what of the work is still expected to run then (that much delays the kernel): work that ends
  // before the client's next request delayed no one, so the background may go on in the idle
  // gap, a piece within what is left at a time. Work issued in idle time is not committed: the
  // next period's measured extra time counts what it delayed.
  void Spend(Time now, Duration time_alone, bool beside) {
    if (!beside) return;
    for (auto& [id, fg] : foreground_) {
      if (fg.running.empty()) {
        fg.idle_work_until = std::max(fg.idle_work_until, now + time_alone);
      } else {
        fg.budget.Commit(time_alone);
      }
    }
  }
  // A narrow PTB kernel beside the foreground keeps its slots from task to task, so the
  // foreground's next kernel waits for them (unshaped blocks give theirs to the foreground's stream
  // first): where a kernel's time alone is known, the budget is spent on it unshaped or not at
  // all (benchmarks/RESULTS.md, "A slowdown budget"); the bound serves kernels not yet timed.
  uint32_t BesideWorkers(const KernelInfo& kernel) const override {
    if (foreground_.empty() || timed_.contains(kernel.shape)) return 0;
    uint32_t workers = UINT32_MAX;
    for (const auto& [id, fg] : foreground_) workers = std::min(workers, fg.budget.Workers(kernel));
    return workers;
  }
  void ForegroundTracked(Time now, ClientId client, const KernelInfo& kernel) override {
    auto it = foreground_.find(client);
    if (it == foreground_.end()) {
      const auto own = budgets_.find(client);
      const SlowdownBudget& budget = own != budgets_.end() ? own->second : default_budget_;
      it = foreground_.emplace(client, Foreground{{budget.slowdown, budget.percentile}, {}}).first;
    }
    Foreground& fg = it->second;
    if (fg.running.empty() && now >= fg.last_end + min_idle_) fg.budget.PeriodEnded();
    if (fg.idle_work_until > now) fg.budget.Commit(fg.idle_work_until - now);
    fg.idle_work_until = Time::min();
    fg.running.push_back({kernel.shape, now, lower_running_});
  }
  void OriginalEnded(Time now, ClientId client) override {
    auto it = foreground_.find(client);
    if (it == foreground_.end() || it->second.running.empty()) return;  // a background kernel
    Foreground& fg = it->second;
    const Run run = fg.running.front();
    fg.running.pop_front();
    const Time start = std::max(run.issued, fg.last_end);
    fg.last_end = now;
    fg.budget.KernelEnded(run.shape, now - start, run.beside);
  }
  void Decided(Time, bool lower_running) override {
    lower_running_ = lower_running;
    if (!lower_running) return;
    for (auto& [id, fg] : foreground_) {
      for (Run& run : fg.running) run.beside = true;
    }
  }

  FormAdvisor& advisor_;
  const SlowdownBudget default_budget_;
  const Duration min_idle_;
  std::map<ClientId, SlowdownBudget> budgets_;  // the clients' own (BudgetChanged)
  std::map<ClientId, Foreground> foreground_;
  absl::flat_hash_set<KernelShape> timed_;  // background shapes whose time alone is known
  bool lower_running_ = false;
};

}  // namespace

std::unique_ptr<Policy> MakePriorityBudgetPolicy(const PriorityOptions& options,
                                                 const BudgetOptions& budget,
                                                 FormAdvisor& advisor) {
  return std::make_unique<PriorityBudgetPolicy>(options, budget, advisor);
}

}  // namespace tally::scheduler
