// `priority-budget`: Tally's hold, shape, preempt (internal/holding_policy.h), except that while
// the foreground has work, background kernels may run beside it as PTB kernels of a bounded
// number of workers; the bound follows the foreground kernels' measured slowdown against their
// time alone (internal/slowdown_budget.h). With a budget of 0 it decides as `priority`.
//
// A foreground kernel's duration is measured from the policy's own events: from its issue (or
// its predecessor's reported end, if later: one client's kernels run in order) to its reported
// end. It ran "beside" background work if any ran at any decision in between.
#include <deque>
#include <map>

#include "scheduler/internal/holding_policy.h"
#include "scheduler/internal/slowdown_budget.h"

namespace tally::scheduler {
namespace {

class PriorityBudgetPolicy final : public internal::HoldingPolicy {
 public:
  PriorityBudgetPolicy(const PriorityOptions& options, const BudgetOptions& budget,
                       FormAdvisor& advisor)
      : HoldingPolicy(options), advisor_(advisor), budget_(budget.slowdown, budget.percentile) {}
  bool UsesTransformedForms() const override { return true; }

  void ClientLeft(Time now, ClientId client, Decisions& out) override {
    foreground_.erase(client);
    HoldingPolicy::ClientLeft(now, client, out);
  }

 private:
  struct Run {
    KernelShape shape;
    Time issued;
    bool beside = false;
  };
  struct Foreground {
    std::deque<Run> running;  // in issue order, which is the order they end in
    Time last_end = Time::min();
  };

  FormChoice BackgroundForm(const KernelInfo& kernel) override { return advisor_.Choose(kernel); }
  uint32_t BesideWorkers(const KernelInfo& kernel) const override {
    return budget_.Workers(kernel);
  }
  void ForegroundTracked(Time now, ClientId client, const KernelInfo& kernel) override {
    foreground_[client].running.push_back({kernel.shape, now, lower_running_});
  }
  void OriginalEnded(Time now, ClientId client) override {
    auto it = foreground_.find(client);
    if (it == foreground_.end() || it->second.running.empty()) return;  // a background kernel
    Foreground& fg = it->second;
    const Run run = fg.running.front();
    fg.running.pop_front();
    const Time start = std::max(run.issued, fg.last_end);
    fg.last_end = now;
    budget_.Record(now, run.shape, now - start, run.beside);
  }
  void Decided(Time, bool lower_running) override {
    lower_running_ = lower_running;
    if (!lower_running) return;
    for (auto& [id, fg] : foreground_) {
      for (Run& run : fg.running) run.beside = true;
    }
  }

  FormAdvisor& advisor_;
  internal::SlowdownBudget budget_;
  std::map<ClientId, Foreground> foreground_;
  bool lower_running_ = false;
};

}  // namespace

std::unique_ptr<Policy> MakePriorityBudgetPolicy(const PriorityOptions& options,
                                                 const BudgetOptions& budget,
                                                 FormAdvisor& advisor) {
  return std::make_unique<PriorityBudgetPolicy>(options, budget, advisor);
}

}  // namespace tally::scheduler
