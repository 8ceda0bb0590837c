// Holding without shaping: background kernels wait for the more important clients' idleness as
// under `priority`, but run in their original form, so nothing can preempt them once issued.
#include "scheduler/internal/holding_policy.h"

namespace tally::scheduler {
namespace {

class PriorityNoTransformPolicy final : public internal::HoldingPolicy {
 public:
  using HoldingPolicy::HoldingPolicy;
  bool UsesTransformedForms() const override { return false; }

 private:
  // Short or not, the original form is all there is: no long-idle wait either.
  FormChoice BackgroundForm(const KernelInfo&) override {
    return {LaunchForm::Original(), /*short_turnaround=*/true};
  }
};

}  // namespace

std::unique_ptr<Policy> MakePriorityNoTransformPolicy(const PriorityOptions& options) {
  return std::make_unique<PriorityNoTransformPolicy>(options);
}

}  // namespace tally::scheduler
