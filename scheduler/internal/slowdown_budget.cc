#include "scheduler/internal/slowdown_budget.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

namespace tally::scheduler::internal {
namespace {

// A smoothed mean: one odd value moves it by an eighth of its difference.
void Smooth(Duration& mean, Duration value) {
  mean = mean == Duration::zero() ? value : mean + (value - mean) / 8;
}

// The value at `quantile` (0.5: the median) of `values`, the nearest rank; not empty.
template <typename T>
T Quantile(const std::deque<T>& values, double quantile) {
  std::vector<T> sorted(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(std::ceil(quantile * static_cast<double>(sorted.size())));
  const size_t index = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(index),
                   sorted.end());
  return sorted[index];
}

// The mean of `values` without those above their `kept` quantile; not empty.
Duration TrimmedMean(const std::deque<Duration>& values, double kept) {
  const Duration cut = Quantile(values, kept);
  Duration sum{0};
  Duration::rep count = 0;
  for (const Duration value : values) {
    if (value > cut) continue;
    sum += value;
    ++count;
  }
  return sum / count;
}

// Keeps the latest `window` values of `values`, `value` the newest.
template <typename T>
void Append(std::deque<T>& values, T value, size_t window) {
  values.push_back(value);
  if (values.size() > window) values.pop_front();
}

}  // namespace

SlowdownBudget::Verdict SlowdownBudget::KernelEnded(const KernelShape& shape, Duration duration,
                                                    bool beside) {
  if (budget_ <= 0) return Verdict::kNone;  // nothing ever runs beside: `priority` exactly
  auto it = alone_.find(shape);
  if (!beside) {
    if (it == alone_.end()) it = alone_.emplace(shape, Duration::zero()).first;
    Smooth(it->second, duration);
    period_alone_ += it->second;
    return Verdict::kNone;
  }
  if (it == alone_.end()) return Verdict::kNone;  // no measure of it alone yet: not judged
  period_beside_ = true;
  period_alone_ += it->second;
  period_extra_ += duration - it->second;
  // Judged against a typical period, so that a period may spend its budget early.
  const Duration allowed{static_cast<Duration::rep>(
      budget_ * static_cast<double>(std::max(period_alone_, typical_alone_).count()))};
  if (stopped_ || period_extra_ <= allowed) return Verdict::kNone;
  stopped_ = true;
  return Verdict::kStopped;
}

SlowdownBudget::Verdict SlowdownBudget::PeriodEnded() {
  if (period_alone_ == Duration::zero()) return Verdict::kNone;  // nothing of it measured
  const bool beside = period_beside_;
  const double slowdown =
      static_cast<double>(period_extra_.count()) / static_cast<double>(period_alone_.count());
  Append(periods_alone_, period_alone_, kWindow);
  typical_alone_ = TrimmedMean(periods_alone_, kTypicalKept);
  period_alone_ = period_extra_ = period_committed_ = Duration::zero();
  period_beside_ = stopped_ = false;
  if (budget_ <= 0) return Verdict::kNone;
  if (beside) {
    Append(slowdowns_, slowdown, kWindow);
    measured_ = Quantile(slowdowns_, percentile_);
    if (*measured_ > budget_) {
      bound_ = bound_ / 2 < kStep ? 0 : bound_ / 2;
      slowdowns_.clear();  // the next verdict is about the new bound
      return Verdict::kShrank;
    }
  }
  // Within the budget; with nothing beside, only a first, narrow bound to try.
  if (bound_ >= 1.0 || (!beside && bound_ > 0)) return Verdict::kNone;
  bound_ = std::min(1.0, bound_ + kStep);
  return Verdict::kGrew;
}

void SlowdownBudget::SetBudget(double budget, double percentile) {
  budget_ = budget;
  percentile_ = percentile;
  slowdowns_.clear();
  measured_.reset();
  if (budget_ <= 0) bound_ = 0;
}

Duration SlowdownBudget::Allowance() const {
  if (budget_ <= 0) return Duration::zero();
  return Duration{
      static_cast<Duration::rep>(budget_ * static_cast<double>(typical_alone_.count()))};
}

Duration SlowdownBudget::Left() const {
  // Kernels that ran faster than their smoothed time alone earn the background nothing: that is
  // noise in the measure, not time the foreground can spare.
  return std::max(Duration::zero(),
                  Allowance() - std::max(Duration::zero(), period_extra_) - period_committed_);
}

uint32_t SlowdownBudget::Workers(const KernelInfo& kernel) const {
  const double slots = static_cast<double>(kernel.resident_per_sm) * kernel.sm_count;
  return static_cast<uint32_t>(std::floor(bound() * slots));
}

}  // namespace tally::scheduler::internal
