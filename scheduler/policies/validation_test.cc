// The validation policy: FIFO order, the given form for kernels that have it, else original.
#include <catch2/catch.hpp>
#include <vector>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

constexpr LaunchInfo kBoth{.client_id = 1, .sliceable = true, .preemptible = true};
constexpr LaunchInfo kNeither{.client_id = 1};

TEST_CASE("validation picks the given form whenever the kernel has it") {
  const LaunchForm sliced{.kind = FormKind::kSliced, .slices = 4};
  auto slicing = MakeValidationPolicy(sliced);
  CHECK(slicing->UsesTransformedForms());
  CHECK(slicing->ChooseForm(kBoth) == sliced);
  CHECK(slicing->ChooseForm({.sliceable = true}) == sliced);
  CHECK(slicing->ChooseForm({.preemptible = true}) == LaunchForm{});

  const LaunchForm preempted{.kind = FormKind::kPreemptible, .workers = 3, .preempt = true};
  auto preempting = MakeValidationPolicy(preempted);
  CHECK(preempting->ChooseForm(kBoth) == preempted);
  CHECK(preempting->ChooseForm({.sliceable = true}) == LaunchForm{});
}

TEST_CASE("kernels the analysis refused run in their original form") {
  for (FormKind kind : {FormKind::kSliced, FormKind::kPreemptible}) {
    auto policy = MakeValidationPolicy({.kind = kind, .slices = 2, .workers = 2});
    CHECK(policy->ChooseForm(kNeither).kind == FormKind::kOriginal);
  }
}

TEST_CASE("only validation builds transformed forms; FIFO launches originals") {
  auto fifo = MakeFifoPolicy();
  CHECK_FALSE(fifo->UsesTransformedForms());
  CHECK(fifo->ChooseForm(kBoth) == LaunchForm{});
  CHECK_FALSE(MakeValidationPolicy({})->UsesTransformedForms());
}

TEST_CASE("validation keeps FIFO's order") {
  auto policy = MakeValidationPolicy({.kind = FormKind::kSliced, .slices = 2});
  std::vector<QueueHead> queues = {{.client_id = 1, .priority = 10, .arrival = 7, .depth = 1},
                                   {.client_id = 2, .priority = 0, .arrival = 3, .depth = 5}};
  CHECK(policy->PickNext(queues) == 1u);
  CHECK_FALSE(policy->PickNext({}).has_value());
}

}  // namespace
}  // namespace tally::scheduler
