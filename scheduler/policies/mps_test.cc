// MPS and MPS with stream priorities on scripted events: every head issued at once, nothing
// held or preempted; only with priority streams is the most important connected clients' work
// in the foreground, following priority changes and departures.
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

TEST_CASE("MPS issues at once; priority streams mark the most important clients' work") {
  for (const bool priority_streams : {false, true}) {
    INFO("priority_streams " << priority_streams);
    PolicyHarness p(MakeMpsPolicy(priority_streams));
    // Client `c`'s kernel, issued at once, in the foreground when `top` and priority streams.
    const auto issued = [&](uint64_t c, bool top) {
      return Actions{IssueOf(c, LaunchForm::Original(), false, priority_streams && top)};
    };
    p.Join(0, 1, ClientPriority::High());
    p.Join(0, 2, ClientPriority::BestEffort());
    CHECK(p.Arrive(1, 1, Head::Kernel(Kernel(1))) == issued(1, true));
    CHECK(p.Arrive(2, 2, Head::Kernel(Kernel(2))) == issued(2, false));
    p.Change(3, 2, ClientPriority::Level(5));
    CHECK(p.Arrive(4, 2, Head::Kernel(Kernel(2))) == issued(2, true));
    CHECK(p.Arrive(5, 1, Head::Other()) == issued(1, false));
    p.Leave(6, 2);
    CHECK(p.Arrive(7, 1, Head::Kernel(Kernel(1))) == issued(1, true));
    CHECK_FALSE(p.wake().has_value());
    CHECK_FALSE(p.policy().UsesTransformedForms());
  }
}

}  // namespace
}  // namespace tally::scheduler
