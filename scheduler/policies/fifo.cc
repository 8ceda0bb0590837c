// FIFO: the oldest queued command of any client goes first; priorities are ignored. The
// baseline the priority policy is measured against.
#include <algorithm>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

class FifoPolicy final : public Policy {
 public:
  std::optional<size_t> PickNext(std::span<const QueueHead> queues) override {
    if (queues.empty()) return std::nullopt;
    auto oldest = std::min_element(
        queues.begin(), queues.end(),
        [](const QueueHead& a, const QueueHead& b) { return a.arrival < b.arrival; });
    return static_cast<size_t>(oldest - queues.begin());
  }
};

}  // namespace

std::unique_ptr<Policy> MakeFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace tally::scheduler
