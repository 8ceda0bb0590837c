// FIFO, priority-no-transform and validation on scripted events with a fake clock.
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

TEST_CASE("FIFO issues every head at once in its original form, whatever the priority") {
  PolicyHarness p(MakeFifoPolicy());
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(2))) == Actions{IssueOf(2)});
  CHECK(p.Arrive(1, 1, Head::Kernel(Kernel(1))) == Actions{IssueOf(1)});
  CHECK(p.Arrive(2, 2, Head::Other()) == Actions{IssueOf(2)});
  CHECK_FALSE(p.wake().has_value());
  CHECK_FALSE(p.policy().UsesTransformedForms());
}

TEST_CASE("priority-no-transform holds background kernels but cannot preempt them") {
  PolicyHarness p(MakePriorityNoTransformPolicy(
      {std::chrono::microseconds(100), std::chrono::milliseconds(10)}));
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(10, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.End(50, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.wake() == Us(150));
  // Long or not, it runs in its original form after min_idle: no long-idle wait.
  CHECK(p.Wake(150) == Actions{IssueOf(2, LaunchForm::Original(), /*notify=*/true)});
  // A foreground arrival now cannot stop it: issued at once, no preemption.
  CHECK(p.Arrive(160, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK_FALSE(p.policy().UsesTransformedForms());
}

TEST_CASE("Validation slices every sliceable kernel, one slice at a time") {
  const LaunchForm sliced = LaunchForm::Sliced(3);
  PolicyHarness p(MakeValidationPolicy(sliced, false));
  p.Join(0, 1, ClientPriority::Unset());
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{IssueOf(1, sliced)});
  CHECK(p.End(1, 1, {FormKind::kSliced, false, 22, 64}) == Actions{IssueOf(1, sliced)});
  CHECK(p.End(2, 1, {FormKind::kSliced, true, 64, 64}).empty());
  // A kernel without the form keeps its original form; other work is issued as it comes.
  CHECK(p.Arrive(3, 1, Head::Kernel(Kernel(2, 64, /*transformable=*/false))) ==
        Actions{IssueOf(1)});
  CHECK(p.Arrive(4, 1, Head::Other()) == Actions{IssueOf(1)});
  CHECK(p.policy().UsesTransformedForms());
}

TEST_CASE("Validation preempts PTB kernels at most three times per launch, then lets them end") {
  const LaunchForm ptb = LaunchForm::Preemptible(2);
  PolicyHarness p(MakeValidationPolicy(ptb, /*preempt=*/true));
  p.Join(0, 1, ClientPriority::Unset());
  int preemptions = 0;
  int issues = 0;
  int64_t now = 0;
  const auto count = [&](const Actions& actions) {
    for (const Action& action : actions) {
      if (action.kind == Action::Kind::kPreempt) {
        ++preemptions;
      } else {
        CHECK(action == IssueOf(1, ptb));
        ++issues;
      }
    }
  };
  count(p.Arrive(now, 1, Head::Kernel(Kernel(1))));
  // Each run is preempted (at once, or when the requested wake-up comes) and ends early, until
  // the last run, which nobody stops.
  for (int run = 0; run < kMaxValidationPreemptions; ++run) {
    if (preemptions == run) {
      REQUIRE(p.wake().has_value());
      now = (p.wake()->count() + 999) / 1000;
      count(p.Wake(now));
    }
    REQUIRE(preemptions == run + 1);
    count(p.End(++now, 1, Stopped(10 * (run + 1))));
  }
  CHECK(issues == kMaxValidationPreemptions + 1);
  CHECK_FALSE(p.wake().has_value());
  CHECK(p.End(++now, 1, Finished(FormKind::kPreemptible)).empty());
  CHECK(preemptions == kMaxValidationPreemptions);
}

}  // namespace
}  // namespace tally::scheduler
