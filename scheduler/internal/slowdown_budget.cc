#include "scheduler/internal/slowdown_budget.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally::scheduler::internal {
namespace {

// A smoothed mean: one odd value moves it by an eighth of its difference.
void Smooth(Duration& mean, Duration value) {
  mean = mean == Duration::zero() ? value : mean + (value - mean) / 8;
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
  Smooth(typical_alone_, period_alone_);
  period_alone_ = period_extra_ = period_committed_ = Duration::zero();
  period_beside_ = stopped_ = false;
  if (budget_ <= 0) return Verdict::kNone;
  if (beside) {
    slowdowns_.push_back(slowdown);
    if (slowdowns_.size() > kWindow) slowdowns_.pop_front();
    measured_ = Percentile();
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
  return std::max(Duration::zero(), Allowance() - period_extra_ - period_committed_);
}

double SlowdownBudget::Percentile() const {
  std::vector<double> sorted(slowdowns_.begin(), slowdowns_.end());
  const size_t rank =
      static_cast<size_t>(std::ceil(percentile_ * static_cast<double>(sorted.size())));
  const size_t index = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(index),
                   sorted.end());
  return sorted[index];
}

uint32_t SlowdownBudget::Workers(const KernelInfo& kernel) const {
  const double slots = static_cast<double>(kernel.resident_per_sm) * kernel.sm_count;
  return static_cast<uint32_t>(std::floor(bound() * slots));
}

}  // namespace tally::scheduler::internal
