// Validation: the order of FIFO, and one fixed form for every kernel that has it. The forms a
// kernel lacks (the analysis refused it) fall back to the original form.
#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class ValidationPolicy final : public Policy {
 public:
  explicit ValidationPolicy(LaunchForm form) : form_(form) {}

  std::optional<size_t> PickNext(std::span<const QueueHead> queues) override {
    return order_->PickNext(queues);
  }

  LaunchForm ChooseForm(const LaunchInfo& launch) override {
    const bool available = (form_.kind == FormKind::kSliced && launch.sliceable) ||
                           (form_.kind == FormKind::kPreemptible && launch.preemptible);
    return available ? form_ : LaunchForm{};
  }

  bool UsesTransformedForms() const override { return form_.kind != FormKind::kOriginal; }

 private:
  LaunchForm form_;
  std::unique_ptr<Policy> order_ = MakeFifoPolicy();
};

}  // namespace

std::unique_ptr<Policy> MakeValidationPolicy(LaunchForm form) {
  return std::make_unique<ValidationPolicy>(form);
}

}  // namespace tally::scheduler
