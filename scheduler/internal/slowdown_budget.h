// The feedback loop of `priority-budget`: how wide the background may run beside the foreground.
// The budget is judged per foreground busy period (from the client's first kernel after an idle
// gap to its last one before the next gap: what a request looks like from the server), not per
// kernel: a period's slowdown is the sum over its kernels of (measured - alone) over the sum of
// their times alone, where "alone" is each kernel shape's smoothed duration in runs with no
// background work on the device. The bound grows after each period while the percentile of the
// latest periods' slowdowns is within the budget and halves when it is over; inside a period, the
// moment the extra time so far passes the budget of a typical period, the bound is zero until
// the period ends (what runs beside is preempted). The allowance (the budget of a typical period)
// is what background kernels run unshaped may spend.
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
  // against the old budget (and their percentile, measured()) are not; a budget of 0 drops the
  // bound to zero at once.
  void SetBudget(double budget, double percentile);

  enum class Verdict { kNone, kGrew, kShrank, kStopped };
  // One foreground kernel's run in the current busy period: its duration, and whether background
  // work was on the device at any time during it. kStopped: the period's extra time just passed
  // its budget, the bound is zero until the period ends.
  Verdict KernelEnded(const KernelShape& shape, Duration duration, bool beside);
  // The current busy period is over: judged, and the next one starts.
  Verdict PeriodEnded();

  // The share of the device's PTB worker slots a background kernel may hold beside the
  // foreground now, in [0, 1].
  double bound() const { return stopped_ ? 0 : bound_; }
  // The percentile of the latest periods' slowdowns (with background work beside them), as last
  // computed; none before the first such period ended.
  std::optional<double> measured() const { return measured_; }
  // The bound for a kernel of `kernel`: its resident workers per SM times the SMs, scaled.
  uint32_t Workers(const KernelInfo& kernel) const;

  // The extra time the budget allows a typical busy period: the budget times the typical time
  // alone of the latest periods (below; what the running check judges a period against). Zero
  // before a period ended.
  Duration Allowance() const;
  // What is left of it in the current period: the allowance less the sum of the period's
  // measured extra time (none when negative) and the times alone of the background work
  // committed to it. What the committed work delayed is in both; counted once (the larger of
  // the two), the background could spend up to twice as much beside a period, and at high load
  // queued requests magnified that far past the budget (benchmarks/RESULTS.md, "A slowdown
  // budget").
  Duration Left() const;
  // Background work (a kernel in its original form or a slice), `time_alone` long, issued
  // beside the current period: it may delay the period by up to that much.
  void Commit(Duration time_alone) { period_committed_ += time_alone; }

  // Growth per period within the budget, as a share of the device.
  static constexpr double kStep = 1.0 / 32;
  // Periods the percentile is taken over (the latest ones since the bound last shrank).
  static constexpr size_t kWindow = 100;
  // The share of those periods, the shortest, that a typical period is the mean of.
  static constexpr double kTypicalKept = 0.9;

 private:
  double budget_;
  double percentile_;
  double bound_ = 0;
  std::optional<double> measured_;
  absl::flat_hash_map<KernelShape, Duration> alone_;  // smoothed duration alone per shape
  std::deque<double> slowdowns_;                      // the latest periods' slowdowns, newest last
  // The current period: its kernels' times alone, their extra time beside background work, and
  // the time alone of the background originals issued beside it.
  Duration period_alone_{0};
  Duration period_extra_{0};
  Duration period_committed_{0};
  bool period_beside_ = false;
  bool stopped_ = false;
  // The latest periods' times alone, and the time alone of a typical period: their mean without
  // the longest tenth (kTypicalKept). A plain mean would follow a few long periods (requests queued
  // behind each other merge into one), and the allowance with it, into the queueing it causes.
  std::deque<Duration> periods_alone_;
  Duration typical_alone_{0};
};

}  // namespace tally::scheduler::internal
