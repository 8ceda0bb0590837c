// TGS on scripted events with a fake clock: the production issues at once in the foreground;
// the opportunistic client's launches per period (sample and budget periods alike here)
// follow TGS's budget (first launch only, then
// 20000 blocks, slow start x1.5 while the production's rate holds, a cut when it drops).
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

constexpr int64_t kPeriodUs = 10'000;

struct Fixture {
  Fixture() {
    p.Join(0, 1, ClientPriority::High());
    p.Join(0, 2, ClientPriority::BestEffort());
  }
  // Arrives 1000-block kernels of client 2 at `us` until one is held; returns how many issued.
  int Drain(int64_t us) {
    for (int issued = 0;; ++issued) {
      const Actions actions = p.Arrive(us, 2, Head::Kernel(Kernel(2, 1000)));
      if (actions.empty()) return issued;
      REQUIRE(actions == Actions{IssueOf(2)});
    }
  }
  // One period: its start releases the held kernel, the production launches `blocks` (none
  // for 0), and client 2 launches until its budget is spent. Returns client 2's launches.
  int Period(int64_t index, uint32_t blocks) {
    const int64_t start = index * kPeriodUs;
    CHECK(p.Wake(start) == Actions{IssueOf(2)});
    if (blocks > 0)
      CHECK(p.Arrive(start, 1, Head::Kernel(Kernel(1, blocks))) == Actions{Foreground(1)});
    const int issued = 1 + Drain(start + 1);
    CHECK(p.wake() == Us(start + kPeriodUs));
    return issued;
  }
  PolicyHarness p{MakeTgsPolicy({Us(kPeriodUs), Us(kPeriodUs)})};
};

TEST_CASE_METHOD(Fixture, "TGS: production at once, opportunistic launches within the budget") {
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1, 64))) == Actions{Foreground(1)});
  // Before the production's rate is known the budget is 0: one launch per period.
  CHECK(Drain(1) == 1);
  CHECK(p.wake() == Us(kPeriodUs));
  CHECK(Period(1, 64) == 21);  // 20000 blocks
  CHECK(Period(2, 64) == 21);  // the production's unimpeded rate is learnt again
  CHECK(Period(3, 64) == 31);  // slow start: 30001
  CHECK(Period(4, 0) == 46);   // 45002.5; this period the production launches nothing...
  CHECK(Period(5, 64) == 31);  // ...its rate dropped: 45002.5 / 1.5, congestion avoidance
  CHECK_FALSE(p.policy().UsesTransformedForms());
}

TEST_CASE("TGS without a more important client limits nobody") {
  PolicyHarness p(MakeTgsPolicy({Us(kPeriodUs), Us(kPeriodUs)}));
  p.Join(0, 1, ClientPriority::BestEffort());
  p.Join(0, 2, ClientPriority::BestEffort());
  for (int i = 0; i < 3; ++i) {
    CHECK(p.Arrive(i, 1, Head::Kernel(Kernel(1, 100'000))) == Actions{Foreground(1)});
    CHECK(p.Arrive(i, 2, Head::Kernel(Kernel(2, 100'000))) == Actions{Foreground(2)});
  }
  CHECK_FALSE(p.wake().has_value());
}

}  // namespace
}  // namespace tally::scheduler
