// The FIFO policy picks the globally oldest head, ignoring priority, and idles on no work.
#include <catch2/catch.hpp>
#include <vector>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

TEST_CASE("FIFO idles without queued work") {
  auto policy = MakeFifoPolicy();
  CHECK_FALSE(policy->PickNext({}).has_value());
}

TEST_CASE("FIFO picks the oldest head whatever the priority") {
  auto policy = MakeFifoPolicy();
  std::vector<QueueHead> queues = {{.client_id = 1, .priority = 10, .arrival = 7, .depth = 1},
                                   {.client_id = 2, .priority = 0, .arrival = 3, .depth = 5},
                                   {.client_id = 3, .priority = 5, .arrival = 9, .depth = 2}};
  CHECK(policy->PickNext(queues) == 1u);
  queues[1].arrival = 12;
  CHECK(policy->PickNext(queues) == 0u);
}

}  // namespace
}  // namespace tally::scheduler
