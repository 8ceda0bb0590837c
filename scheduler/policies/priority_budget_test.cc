// priority-budget on scripted events with a fake clock: the bound on background work beside the
// foreground grows while the foreground's measured slowdown is within the budget, halves (and
// preempts what is now too wide) when over, drops to zero when far over; at budget 0 every
// decision is `priority`'s.
#include <catch2/catch.hpp>
#include <functional>

#include "scheduler/internal/slowdown_budget.h"
#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

const PriorityOptions kOptions{std::chrono::microseconds(100), std::chrono::milliseconds(10)};
// Kernel(): 4 resident PTB workers per SM on 8 SMs, so one step of the bound is one worker.
LaunchForm Ptb(uint32_t workers) { return LaunchForm::Preemptible(workers); }

struct Fixture {
  FakeAdvisor advisor;
  PolicyHarness p{MakePriorityBudgetPolicy(kOptions, {.slowdown = 0.10}, advisor)};
  Fixture() {
    p.Join(0, 1, kHigh);
    p.Join(0, 2, kBestEffort);
  }
  // The foreground's kernel 1 alone for 100 us; the background's kernel 7 then runs beside it,
  // one worker wide; a foreground kernel beside it takes 105 us (5%): the bound grows to two.
  void GrowToTwo() {
    CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
    CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(7))).empty());  // held: no bound yet
    CHECK(p.End(100, 1, Finished(FormKind::kOriginal)) == Actions{IssueOf(2, Ptb(1))});
    CHECK(p.wake() == Us(200));
    // The foreground's next kernel does not preempt the one-worker kernel beside it.
    CHECK(p.Arrive(150, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
    CHECK(p.End(255, 1, Finished(FormKind::kOriginal)).empty());
    CHECK(p.End(260, 2, Finished(FormKind::kPreemptible)).empty());
    CHECK(p.Arrive(261, 2, Head::Kernel(Kernel(7))) == Actions{IssueOf(2, Ptb(2))});
  }
};

TEST_CASE_METHOD(Fixture, "The bound grows while the slowdown stays within the budget") {
  GrowToTwo();
  CHECK(p.Arrive(300, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(408, 1, Finished(FormKind::kOriginal)).empty());  // 8%: three workers
  CHECK(p.End(410, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Arrive(411, 2, Head::Kernel(Kernel(7))) == Actions{IssueOf(2, Ptb(3))});
}

TEST_CASE_METHOD(Fixture, "Over the budget the bound halves, far over it drops to zero") {
  GrowToTwo();
  CHECK(p.Arrive(300, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  // 15% over alone: the bound halves to one worker; the foreground is idle, nothing to preempt.
  CHECK(p.End(415, 1, Finished(FormKind::kOriginal)).empty());
  // The next foreground kernel preempts the two-worker kernel, now too wide to stay beside it.
  CHECK(p.Arrive(420, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(425, 2, Stopped(10)).empty());  // and does not resume while it is too wide
  // 30% over alone (more than twice the budget): no bound, for the back-off period.
  CHECK(p.End(550, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.wake() == Us(650));
  CHECK(p.Wake(650) == Actions{IssueOf(2, Ptb(2))});  // idle time: resumed as `priority` would
  CHECK(p.Arrive(700, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(705, 2, Stopped(20)).empty());
  CHECK(p.End(800, 1, Finished(FormKind::kOriginal)).empty());  // within budget, in the back-off
  CHECK(p.Wake(900) == Actions{IssueOf(2, Ptb(2))});
  CHECK(p.Arrive(910, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(915, 2, Stopped(30)).empty());
  CHECK(p.End(1'010, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(1'110) == Actions{IssueOf(2, Ptb(2))});
  CHECK(p.End(1'200, 2, Finished(FormKind::kPreemptible)).empty());
  // After the back-off, a run alone tries a one-worker bound again: a new kernel runs beside.
  CHECK(p.Arrive(21'000, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(21'100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(21'101, 2, Head::Kernel(Kernel(7))) == Actions{IssueOf(2, Ptb(1))});
}

TEST_CASE_METHOD(Fixture, "Each foreground client measures against its own budget") {
  GrowToTwo();
  CHECK(p.policy().MeasuredSlowdown(Client(1)) == Approx(0.05));
  CHECK_FALSE(p.policy().MeasuredSlowdown(Client(2)).has_value());  // the background
  // A second foreground client whose budget is 0: nothing may run beside it. Once its first
  // kernel is on the device, the next foreground kernel preempts the background kernel that
  // the first client's bound let run two workers wide.
  p.Join(262, 3, kHigh);
  p.Budget(262, 3, {.slowdown = 0});
  CHECK(p.Arrive(300, 3, Head::Kernel(Kernel(1))) == Actions{Foreground(3, true)});
  CHECK(p.Arrive(301, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(305, 2, Stopped(10)).empty());  // and it stays held
  CHECK_FALSE(p.policy().MeasuredSlowdown(Client(3)).has_value());
}

TEST_CASE_METHOD(Fixture, "A client's budget of 0 holds the background as priority does") {
  p.Budget(0, 1, {.slowdown = 0});
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(7))).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());  // no first, narrow bound
}

TEST_CASE("The percentile tolerates the rare slow run the budget's percentile allows") {
  internal::SlowdownBudget budget(0.10, 0.99);
  const KernelShape shape = Kernel(1).shape;
  const auto us = [](int64_t n) { return std::chrono::microseconds(n); };
  CHECK(budget.Record(Us(0), shape, us(100), false) == internal::SlowdownBudget::Verdict::kGrew);
  for (int i = 0; i < 99; ++i) budget.Record(Us(1), shape, us(105), true);
  // One run in a hundred over the budget is within a p99 budget...
  CHECK(budget.Record(Us(2), shape, us(115), true) == internal::SlowdownBudget::Verdict::kGrew);
  CHECK(budget.bound() == 1.0);
  // ...two are not.
  CHECK(budget.Record(Us(3), shape, us(115), true) == internal::SlowdownBudget::Verdict::kShrank);
  CHECK(budget.bound() == 0.5);
}

TEST_CASE("At budget 0 every decision is priority's") {
  FakeAdvisor advisor;
  advisor.choices[KernelId(4)] = {LaunchForm::Original(), /*short_turnaround=*/true};
  advisor.choices[KernelId(9)] = {LaunchForm::Sliced(4), true};
  PolicyHarness budget(MakePriorityBudgetPolicy(kOptions, {.slowdown = 0}, advisor));
  PolicyHarness priority(MakePriorityPolicy(kOptions, advisor));
  const std::vector<std::function<Actions(PolicyHarness&)>> script = {
      [](auto& p) { return p.Join(0, 1, kHigh); },
      [](auto& p) { return p.Join(0, 2, kBestEffort); },
      [](auto& p) { return p.Join(0, 3, kBestEffort); },
      [](auto& p) { return p.Arrive(0, 2, Head::Kernel(Kernel(4))); },  // short, original
      [](auto& p) { return p.Arrive(1, 3, Head::Kernel(Kernel(9))); },  // sliced
      [](auto& p) { return p.Arrive(5, 1, Head::Kernel(Kernel(1))); },  // beside the short one
      [](auto& p) { return p.End(20, 2, Finished(FormKind::kOriginal)); },
      [](auto& p) { return p.Arrive(21, 2, Head::Kernel(Kernel(7))); },
      [](auto& p) {
        return p.End(30, 3, {FormKind::kSliced, false, 16, 64});
      },
      [](auto& p) { return p.End(105, 1, Finished(FormKind::kOriginal)); },
      [](auto& p) { return p.Arrive(150, 1, Head::Kernel(Kernel(1))); },
      [](auto& p) { return p.End(250, 1, Finished(FormKind::kOriginal)); },
      [](auto& p) { return p.Wake(350); },
      [](auto& p) { return p.Arrive(360, 1, Head::Kernel(Kernel(1))); },
      [](auto& p) { return p.End(365, 2, Stopped(10)); },
      [](auto& p) {
        return p.End(366, 3, {FormKind::kSliced, false, 32, 64});
      },
      [](auto& p) { return p.End(460, 1, Finished(FormKind::kOriginal)); },
      [](auto& p) { return p.Wake(560); },
      [](auto& p) { return p.Leave(570, 1); },
      [](auto& p) { return p.End(580, 2, Finished(FormKind::kPreemptible)); },
  };
  for (size_t i = 0; i < script.size(); ++i) {
    INFO("event " << i);
    CHECK(script[i](budget) == script[i](priority));
    CHECK(budget.wake() == priority.wake());
  }
}

TEST_CASE("The registry makes priority-budget and refuses budgets out of range") {
  FakeAdvisor advisor;
  CHECK(MakePolicy("priority-budget",
                   {.priority = {}, .budget = {.slowdown = 0.2}, .advisor = &advisor})
            .ok());
  CHECK_FALSE(MakePolicy("priority-budget", {.priority = {}, .budget = {.slowdown = 0.2}}).ok());
  auto negative = MakePolicy("priority-budget",
                             {.priority = {}, .budget = {.slowdown = -0.1}, .advisor = &advisor});
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().message() == "slowdown budget -0.1 is not between 0 and 10 (1000%)");
  auto percentile = MakePolicy(
      "priority-budget",
      {.priority = {}, .budget = {.slowdown = 0.1, .percentile = 0}, .advisor = &advisor});
  REQUIRE_FALSE(percentile.ok());
  CHECK(percentile.status().message() == "slowdown percentile 0 is not in (0, 1]");
}

}  // namespace
}  // namespace tally::scheduler
