// Tally's policy: hold, shape, preempt (internal/holding_policy.h), with each background kernel
// in the form the profiler chose (a FormAdvisor).
#include "scheduler/internal/holding_policy.h"

namespace tally::scheduler {
namespace {

class PriorityPolicy final : public internal::HoldingPolicy {
 public:
  PriorityPolicy(const PriorityOptions& options, FormAdvisor& advisor)
      : HoldingPolicy(options), advisor_(advisor) {}
  bool UsesTransformedForms() const override { return true; }

 private:
  FormChoice BackgroundForm(const KernelInfo& kernel) override { return advisor_.Choose(kernel); }
  FormAdvisor& advisor_;
};

}  // namespace

std::unique_ptr<Policy> MakePriorityPolicy(const PriorityOptions& options, FormAdvisor& advisor) {
  return std::make_unique<PriorityPolicy>(options, advisor);
}

}  // namespace tally::scheduler
