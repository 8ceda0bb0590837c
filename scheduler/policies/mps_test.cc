// MPS and MPS with stream priorities on scripted events: everything issued at once; with
// priority streams, the most important connected clients' work in the foreground.
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

TEST_CASE("MPS issues every head at once, on ordinary streams") {
  PolicyHarness p(MakeMpsPolicy(/*priority_streams=*/false));
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(2))) == Actions{IssueOf(2)});
  CHECK(p.Arrive(1, 1, Head::Kernel(Kernel(1))) == Actions{IssueOf(1)});
  CHECK(p.Arrive(2, 2, Head::Other()) == Actions{IssueOf(2)});
  CHECK_FALSE(p.wake().has_value());
  CHECK_FALSE(p.policy().UsesTransformedForms());
}

TEST_CASE("MPS with priority streams puts the most important clients' work in the foreground") {
  PolicyHarness p(MakeMpsPolicy(/*priority_streams=*/true));
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(1, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1)});
  CHECK(p.Arrive(2, 2, Head::Kernel(Kernel(2))) == Actions{IssueOf(2)});
  // Priorities change, and clients leave: the top is always the current one.
  p.Change(3, 2, ClientPriority::Level(5));
  CHECK(p.Arrive(4, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2)});
  CHECK(p.Arrive(5, 1, Head::Kernel(Kernel(1))) == Actions{IssueOf(1)});
  p.Leave(6, 2);
  CHECK(p.Arrive(7, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1)});
}

}  // namespace
}  // namespace tally::scheduler
