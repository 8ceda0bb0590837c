#include "scheduler/internal/slowdown_budget.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally::scheduler::internal {

SlowdownBudget::Verdict SlowdownBudget::Record(Time now, const KernelShape& shape,
                                               Duration duration, bool beside) {
  if (budget_ <= 0) return Verdict::kNone;  // nothing ever runs beside: `priority` exactly
  if (!beside) {
    // A smoothed mean: one odd run moves it by an eighth of its difference.
    auto [it, inserted] = alone_.try_emplace(shape, duration);
    if (!inserted) it->second += (duration - it->second) / 8;
    // Nothing runs beside the foreground: try a first, narrow bound.
    if (bound_ == 0 && now >= hold_until_) {
      bound_ = kStep;
      return Verdict::kGrew;
    }
    return Verdict::kNone;
  }
  auto it = alone_.find(shape);
  if (it == alone_.end() || it->second <= Duration::zero()) return Verdict::kNone;
  const double slowdown =
      static_cast<double>(duration.count()) / static_cast<double>(it->second.count()) - 1;
  if (slowdown > 2 * budget_) {
    measured_ = slowdown;
    bound_ = 0;
    slowdowns_.clear();
    hold_until_ = now + kBackoff;
    return Verdict::kFarOver;
  }
  slowdowns_.push_back(slowdown);
  if (slowdowns_.size() > kWindow) slowdowns_.pop_front();
  measured_ = Percentile();
  if (*measured_ > budget_) {
    bound_ = bound_ / 2 < kStep ? 0 : bound_ / 2;
    slowdowns_.clear();  // the next verdict is about the new bound
    return Verdict::kShrank;
  }
  if (now < hold_until_) return Verdict::kNone;
  bound_ = std::min(1.0, bound_ + kStep);
  return Verdict::kGrew;
}

void SlowdownBudget::SetBudget(double budget, double percentile) {
  budget_ = budget;
  percentile_ = percentile;
  slowdowns_.clear();
  if (budget_ <= 0) bound_ = 0;
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
  return static_cast<uint32_t>(std::floor(bound_ * slots));
}

}  // namespace tally::scheduler::internal
