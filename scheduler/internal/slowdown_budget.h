// The feedback loop of `priority-budget`: how wide the background may run beside the foreground.
// It keeps each foreground kernel shape's duration alone (from runs with no background work on
// the device) and the slowdowns of the latest runs beside background work, and adapts the bound:
// grows while their percentile is within the budget, halves when it is over, drops to zero (and
// stays there for a while) when a single run is more than twice the budget over its time alone.
#pragma once

#include <deque>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "scheduler/types.h"

namespace tally::scheduler::internal {

class SlowdownBudget {
 public:
  // `budget`: the slowdown allowed (0.1: 10% longer than alone) at `percentile` (0.99: p99).
  SlowdownBudget(double budget, double percentile) : budget_(budget), percentile_(percentile) {}

  // A new budget (tally-ctl budget): the durations alone are kept, the slowdowns measured
  // against the old budget are not; a budget of 0 drops the bound to zero at once.
  void SetBudget(double budget, double percentile);

  enum class Verdict { kNone, kGrew, kShrank, kFarOver };
  // One foreground kernel's run: its duration, and whether background work was on the device at
  // any time during it.
  Verdict Record(Time now, const KernelShape& shape, Duration duration, bool beside);

  // The share of the device's PTB worker slots a background kernel may hold beside the
  // foreground, in [0, 1].
  double bound() const { return bound_; }
  // The percentile of the latest slowdowns beside background work, as last computed (a run far
  // over the budget: its slowdown); none before the first such run.
  std::optional<double> measured() const { return measured_; }
  // The bound for a kernel of `kernel`: its resident workers per SM times the SMs, scaled.
  uint32_t Workers(const KernelInfo& kernel) const;

  // Growth per run within the budget, as a share of the device.
  static constexpr double kStep = 1.0 / 32;
  // Slowdowns the percentile is taken over (the latest ones since the bound last shrank).
  static constexpr size_t kWindow = 100;
  // How long the bound stays zero after a run far over the budget.
  static constexpr Duration kBackoff = std::chrono::milliseconds(20);

 private:
  double Percentile() const;

  double budget_;
  double percentile_;
  double bound_ = 0;
  std::optional<double> measured_;
  Time hold_until_ = Time::min();
  absl::flat_hash_map<KernelShape, Duration> alone_;  // smoothed duration alone per shape
  std::deque<double> slowdowns_;                      // the latest runs beside, newest last
};

}  // namespace tally::scheduler::internal
