// Time slicing on scripted events with a fake clock: one client at a time, the switch after the
// slice once the issued kernels ended, early release when out of work, round robin.
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

const Action kIssue1 = IssueOf(1, LaunchForm::Original(), /*notify=*/true);
const Action kIssue2 = IssueOf(2, LaunchForm::Original(), /*notify=*/true);
const Action kIssue3 = IssueOf(3, LaunchForm::Original(), /*notify=*/true);

struct Fixture {
  // 2 ms slices, two kernels in flight.
  PolicyHarness p{MakeTimeSlicePolicy({std::chrono::milliseconds(2), 2})};
};

TEST_CASE_METHOD(Fixture, "One client at a time; the switch waits for its kernels to end") {
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{kIssue1});
  CHECK(p.Arrive(1, 1, Head::Kernel(Kernel(1))) == Actions{kIssue1});
  CHECK(p.Arrive(2, 1, Head::Kernel(Kernel(1))).empty());  // two in flight already
  CHECK(p.Arrive(3, 2, Head::Kernel(Kernel(2))).empty());  // priorities do not matter
  CHECK(p.wake() == Us(2000));
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)) == Actions{kIssue1});
  // The slice is over: nothing more of client 1, whose kernels still run.
  CHECK(p.Wake(2000).empty());
  CHECK(p.End(2100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(2200, 1, Finished(FormKind::kOriginal)) == Actions{kIssue2});
  CHECK_FALSE(p.policy().UsesTransformedForms());
}

TEST_CASE_METHOD(Fixture, "A client out of work gives the device up before its slice ends") {
  p.Join(0, 1, ClientPriority::High());
  p.Join(0, 2, ClientPriority::BestEffort());
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{kIssue1});
  CHECK(p.Arrive(10, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.End(50, 1, Finished(FormKind::kOriginal)) == Actions{kIssue2});
  // Other work of the client holding the device goes at once, without notify.
  CHECK(p.Arrive(60, 2, Head::Other()) == Actions{IssueOf(2)});
}

TEST_CASE_METHOD(Fixture, "Round robin: the next client after the last holder, by id") {
  p.Join(0, 1, ClientPriority::Unset());
  p.Join(0, 2, ClientPriority::Unset());
  p.Join(0, 3, ClientPriority::Unset());
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{kIssue1});
  CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.Arrive(2, 3, Head::Kernel(Kernel(3))).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)) == Actions{kIssue2});
  CHECK(p.Arrive(200, 1, Head::Kernel(Kernel(1))).empty());
  // Client 3 waited longer than client 1's new head: it comes first.
  CHECK(p.End(300, 2, Finished(FormKind::kOriginal)) == Actions{kIssue3});
  // The holder leaving hands the device on at once.
  CHECK(p.Leave(400, 3) == Actions{kIssue1});
}

}  // namespace
}  // namespace tally::scheduler
