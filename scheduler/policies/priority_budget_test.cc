// priority-budget on scripted events with a fake clock: the bound on background work beside the
// foreground grows after each busy period whose slowdown is within the budget, halves after one
// over it, and drops to zero (preempting what runs beside) the moment a period's extra time passes
// the budget; a kernel started or resumed narrow beside the foreground is widened once the
// foreground is idle; a kernel whose time alone fits the allowance runs unshaped (in idle time,
// within the allowance; beside a period, within what is left of it, and right after it, within
// what is left without spending it unless the next kernel comes before the work's end), and one
// that does not fit runs in slices sized the same way; a budget changed to 0 preempts what runs
// beside at once, and a kernel in slices goes on through a budget of 0 and back; at budget 0 every
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
  // One busy period of the foreground (one kernel) from `at`, beside the background's kernel 7
  // running at full width: it is preempted and resumed `workers` wide beside the foreground
  // kernel, which ends `took` us after its issue; once the foreground has been idle for
  // min_idle the background kernel is preempted again and resumes at full width.
  void Period(int64_t at, uint32_t workers, int64_t took) {
    CHECK(p.Arrive(at, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
    CHECK(p.End(at + 5, 2, Stopped(10)) == Actions{IssueOf(2, Ptb(workers))});
    CHECK(p.End(at + took, 1, Finished(FormKind::kOriginal)).empty());
    CHECK(p.wake() == Us(at + took + 100));
    CHECK(p.Wake(at + took + 100) == Actions{PreemptOf(2)});
    CHECK(p.End(at + took + 105, 2, Stopped(20)) == Actions{IssueOf(2, Ptb(0))});
  }
  // The foreground's kernel 1 alone for 100 us, then the background's kernel 7 at full width
  // (as `priority` runs it); the next period is the first one judged: it runs one worker beside
  // the foreground and takes 105 us (5%), so the bound grows to two.
  void GrowToTwo() {
    CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
    CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(7))).empty());  // held: no bound yet
    CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
    CHECK(p.Wake(200) == Actions{IssueOf(2, Ptb(0))});
    Period(300, 1, 105);
    CHECK(p.Arrive(600, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
    CHECK(p.End(605, 2, Stopped(30)) == Actions{IssueOf(2, Ptb(2))});
  }
};

TEST_CASE_METHOD(Fixture, "The bound grows after each period within the budget") {
  GrowToTwo();
  CHECK(p.End(708, 1, Finished(FormKind::kOriginal)).empty());  // 8%: three workers next
  CHECK(p.Wake(808) == Actions{PreemptOf(2)});
  CHECK(p.End(810, 2, Stopped(40)) == Actions{IssueOf(2, Ptb(0))});
  Period(900, 3, 100);
  CHECK(p.policy().MeasuredSlowdown(Client(1)) == Approx(0.08));
}

TEST_CASE_METHOD(Fixture, "At a full bound a kernel runs beside the foreground at full width") {
  GrowToTwo();
  CHECK(p.End(700, 1, Finished(FormKind::kOriginal)).empty());  // alone's time: three next
  CHECK(p.Wake(800) == Actions{PreemptOf(2)});
  CHECK(p.End(805, 2, Stopped(40)) == Actions{IssueOf(2, Ptb(0))});
  for (uint32_t workers = 3; workers < 32; ++workers) Period(1'000 * workers, workers, 100);
  // The bound is the whole device: resumed in its full form, it is neither preempted by the
  // foreground's next kernel nor widened when the foreground is idle.
  CHECK(p.Arrive(32'000, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(32'005, 2, Stopped(50)) == Actions{IssueOf(2, Ptb(0))});
  CHECK(p.Arrive(32'050, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(32'100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(32'150, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(32'250).empty());
}

TEST_CASE_METHOD(Fixture,
                 "A period over the budget stops what runs beside it, then halves the bound") {
  GrowToTwo();
  CHECK(p.Arrive(601, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  // The first kernel ends 20 us over its 100 alone: past a typical period's budget (10 us), so
  // nothing runs beside the rest of the period.
  CHECK(p.End(720, 1, Finished(FormKind::kOriginal)) == Actions{PreemptOf(2)});
  CHECK(p.End(725, 2, Stopped(40)).empty());
  CHECK(p.End(830, 1, Finished(FormKind::kOriginal)).empty());  // 110 us: 10 more
  CHECK(p.Wake(930) == Actions{IssueOf(2, Ptb(0))});
  // The period took 30 us over its 200 alone (15%): the bound halves to one worker.
  Period(1'000, 1, 100);
  CHECK(p.policy().MeasuredSlowdown(Client(1)) == Approx(0.15));
}

TEST_CASE_METHOD(Fixture, "Each foreground client measures against its own budget") {
  GrowToTwo();
  CHECK(p.policy().MeasuredSlowdown(Client(1)) == Approx(0.05));
  CHECK_FALSE(p.policy().MeasuredSlowdown(Client(2)).has_value());  // the background
  // A second foreground client whose budget is 0: nothing may run beside it. Once its first
  // kernel is on the device, the next foreground kernel preempts the background kernel that
  // the first client's bound let run two workers wide.
  p.Join(606, 3, kHigh);
  p.Budget(606, 3, {.slowdown = 0});
  CHECK(p.Arrive(610, 3, Head::Kernel(Kernel(1))) == Actions{Foreground(3, true)});
  CHECK(p.Arrive(611, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(615, 2, Stopped(40)).empty());  // and it stays held
  CHECK_FALSE(p.policy().MeasuredSlowdown(Client(3)).has_value());
}

// Two periods of the foreground alone, 100 us each: the budget of 10% allows a typical period
// 10 us more from the second one on. The background's kernel 8 takes 5 us alone, kernel 6 50 us.
struct KnownTimes : Fixture {
  KnownTimes() {
    advisor.choices[KernelId(8)] = {Ptb(0), true, Us(5)};
    advisor.choices[KernelId(6)] = {Ptb(0), true, Us(50)};
    CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
    CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
    CHECK(p.Arrive(300, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  }
  static Action Unshaped(uint64_t client) { return IssueOf(client, {}, /*notify=*/true); }
};

TEST_CASE_METHOD(KnownTimes, "In idle time a kernel that fits the allowance runs unshaped") {
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(600, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.Arrive(601, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  // Two unshaped kernels are on the device: the third waits for the first's end.
  CHECK(p.Arrive(602, 2, Head::Kernel(Kernel(8))).empty());
  CHECK(p.End(610, 2, Finished(FormKind::kOriginal)) == Actions{Unshaped(2)});
  CHECK(p.End(615, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(620, 2, Finished(FormKind::kOriginal)).empty());
  // 50 us does not fit 10: the advisor's form.
  CHECK(p.Arrive(621, 2, Head::Kernel(Kernel(6))) == Actions{IssueOf(2, Ptb(0))});
}

TEST_CASE_METHOD(KnownTimes, "Beside a busy period only what is left of its allowance") {
  // 5 us committed, then 5 more: the allowance (10 us) is spent. The next kernel's time alone is
  // known, so it is held, not run narrow beside the foreground (the bound is one worker after a
  // period alone).
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.Arrive(302, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.End(310, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(311, 2, Head::Kernel(Kernel(8))).empty());
  CHECK(p.End(330, 2, Finished(FormKind::kOriginal)).empty());
  // The foreground's kernel took 108 us beside them (8% over, within the budget); once it has
  // been idle for min_idle, the held kernel fits the allowance of idle time.
  CHECK(p.End(408, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(508) == Actions{Unshaped(2)});
  CHECK(p.End(510, 2, Finished(FormKind::kOriginal)).empty());
  // The next period starts with the whole allowance again.
  CHECK(p.Arrive(700, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(701, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  // 50 us does not fit the 5 left: held. A kernel not yet timed runs as the bound allows (two
  // workers after a period within the budget).
  CHECK(p.Arrive(711, 2, Head::Kernel(Kernel(6))).empty());
  p.Join(712, 3, kBestEffort);
  CHECK(p.Arrive(713, 3, Head::Kernel(Kernel(7))) == Actions{IssueOf(3, Ptb(2))});
}

TEST_CASE_METHOD(KnownTimes, "A timed kernel first seen when the allowance is spent is held") {
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.Arrive(302, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  // Nothing left of the allowance, and kernel 6 never asked about: the advisor knows its time
  // alone, so it is not run as narrow PTB beside the period (which the foreground's next kernel
  // would have to preempt), but held as a kernel known to be timed is.
  p.Join(303, 3, kBestEffort);
  CHECK(p.Arrive(304, 3, Head::Kernel(Kernel(6))).empty());
  // A kernel the advisor has no time for still runs as the bound allows (one worker).
  p.Join(305, 4, kBestEffort);
  CHECK(p.Arrive(306, 4, Head::Kernel(Kernel(7))) == Actions{IssueOf(4, Ptb(1))});
}

TEST_CASE_METHOD(KnownTimes, "Beside a busy period its measured extra and its commitments add up") {
  // 5 us committed; the foreground's kernel then takes 104 us beside it: 4 us measured over
  // alone. Left: 10 - (5 + 4) = 1 us, not 10 - 5 (the larger of the two), so the next 5 us
  // kernel is held while the period goes on.
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.End(310, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(404, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(405, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(406, 2, Head::Kernel(Kernel(8))).empty());
  // Once the foreground has been idle for min_idle, it runs within the allowance of idle time.
  CHECK(p.End(505, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(605) == Actions{Unshaped(2)});
}

TEST_CASE_METHOD(KnownTimes, "Work that ends before the foreground's next kernel spends nothing") {
  // The foreground has just gone idle (for less than min_idle): kernels of 5 us run one after
  // another within the 10 us left, none committed, as each ends before its next kernel.
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(401, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.End(406, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(407, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.End(412, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(413, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  // The foreground's next kernel, in the same period, comes 3 us before the last one's expected
  // end: those 3 us are committed, and 7 are left: one more 5 us kernel beside it, not two.
  CHECK(p.Arrive(415, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(416, 2, Head::Kernel(Kernel(8))) == Actions{Unshaped(2)});
  CHECK(p.End(418, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(421, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(422, 2, Head::Kernel(Kernel(8))).empty());
}

TEST_CASE_METHOD(KnownTimes, "A kernel that does not fit runs in slices sized to the allowance") {
  // 40 blocks, 16 us alone: a wave of 32 blocks (4 per SM on 8 SMs), then one of 8, 8 us each.
  advisor.choices[KernelId(5)] = {Ptb(0), true, Us(16)};
  const auto slice = [](uint32_t blocks) { return IssueOf(2, LaunchForm::Slice(blocks)); };
  // Beside the busy period one wave fits the 10 us left.
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(5, 40))) == Actions{slice(32)});
  // The 8 blocks left take a wave's time, more than the 2 us left: held.
  CHECK(p.End(311, 2, {FormKind::kSliced, false, 32, 40}).empty());
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  // Idle: the next slice as large as the allowance allows, the rest of the kernel here.
  CHECK(p.Wake(500) == Actions{slice(8)});
  CHECK(p.End(510, 2, {FormKind::kSliced, true, 40, 40}).empty());
  // The next one is started in slices in idle time too.
  CHECK(p.Arrive(511, 2, Head::Kernel(Kernel(5, 40))) == Actions{slice(32)});
  // A new period: the last 8 blocks fit its 10 us, at a whole wave's cost (8 us, not 8/32 of it),
  // so a 5 us kernel of another client does not fit what is left.
  CHECK(p.Arrive(700, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(705, 2, {FormKind::kSliced, false, 32, 40}) == Actions{slice(8)});
  p.Join(706, 3, kBestEffort);
  CHECK(p.Arrive(707, 3, Head::Kernel(Kernel(8))).empty());
}

TEST_CASE_METHOD(KnownTimes, "A kernel in slices whose foreground left runs the rest at once") {
  // 320 blocks, 80 us alone: waves of 32 blocks, 8 us each; one fits the 10 us left.
  advisor.choices[KernelId(9)] = {Ptb(0), true, Us(80)};
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(9, 320))) ==
        Actions{IssueOf(2, LaunchForm::Slice(32))});
  CHECK(p.Leave(305, 1).empty());
  // Nothing more important is connected: the 288 blocks left in one slice, on the top's streams.
  CHECK(p.End(311, 2, {FormKind::kSliced, false, 32, 320}) ==
        Actions{IssueOf(2, LaunchForm::Slice(288), false, /*foreground=*/true)});
}

TEST_CASE_METHOD(KnownTimes, "Without an allowance no kernel is started in slices") {
  advisor.choices[KernelId(5)] = {Ptb(0), true, Us(16)};
  p.Budget(301, 1, {.slowdown = 0});
  // Beside the period: held, as priority holds it; in idle time the advisor's form.
  CHECK(p.Arrive(302, 2, Head::Kernel(Kernel(5, 40))).empty());
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(500) == Actions{IssueOf(2, Ptb(0))});
}

TEST_CASE_METHOD(KnownTimes, "A kernel not one wave of which fits the allowance is not sliced") {
  // 40 blocks, 64 us alone: waves of 32 us, more than the 10 us allowance.
  advisor.choices[KernelId(5)] = {Ptb(0), true, Us(64)};
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(401, 2, Head::Kernel(Kernel(5, 40))).empty());  // held until min_idle
  CHECK(p.Wake(500) == Actions{IssueOf(2, Ptb(0))});             // the advisor's form
}

TEST_CASE_METHOD(KnownTimes, "A kernel in slices goes on through a budget of 0 and back") {
  // 40 blocks, 16 us alone: waves of 32 blocks, 8 us each; the allowance is 10 us.
  advisor.choices[KernelId(5)] = {Ptb(0), true, Us(16)};
  const auto slice = [](uint32_t blocks) { return IssueOf(2, LaunchForm::Slice(blocks)); };
  CHECK(p.Arrive(301, 2, Head::Kernel(Kernel(5, 40))) == Actions{slice(32)});
  CHECK(p.Budget(305, 1, {.slowdown = 0}).empty());  // a slice is not preempted: it ends
  CHECK(p.End(311, 2, {FormKind::kSliced, false, 32, 40}).empty());  // held beside the period
  CHECK(p.End(400, 1, Finished(FormKind::kOriginal)).empty());
  // In idle time a started kernel goes on a wave at a time, without an allowance too.
  CHECK(p.Wake(500) == Actions{slice(8)});
  CHECK(p.End(510, 2, {FormKind::kSliced, true, 40, 40}).empty());
  // Back to 10%: the durations alone were kept, so the allowance is back at once.
  CHECK(p.Budget(511, 1, {.slowdown = 0.10}).empty());
  CHECK(p.Arrive(512, 2, Head::Kernel(Kernel(5, 40))) == Actions{slice(32)});
}

TEST_CASE("The allowance is the budget of a typical period, less what the period spent") {
  internal::SlowdownBudget budget(0.10, 0.99);
  const KernelShape shape = Kernel(1).shape;
  CHECK(budget.Allowance() == Us(0));  // nothing measured yet
  budget.KernelEnded(shape, Us(200), false);
  budget.PeriodEnded();
  CHECK(budget.Allowance() == Us(20));
  budget.Commit(Us(5));
  CHECK(budget.Left() == Us(15));
  budget.KernelEnded(shape, Us(212), true);  // 12 us over alone
  CHECK(budget.Left() == Us(3));
  budget.Commit(Us(5));
  CHECK(budget.Left() == Us(0));  // never negative
  budget.PeriodEnded();
  CHECK(budget.Left() == budget.Allowance());
  budget.SetBudget(0, 0.99);
  CHECK(budget.Allowance() == Us(0));
}

TEST_CASE("A typical period leaves out the longest tenth: a few long, queued ones do not grow it") {
  internal::SlowdownBudget budget(0.10, 0.99);
  const KernelShape shape = Kernel(1).shape;
  const auto period = [&](int kernels) {
    for (int i = 0; i < kernels; ++i) budget.KernelEnded(shape, Us(100), false);
    budget.PeriodEnded();
  };
  for (int i = 0; i < 36; ++i) period(1);  // one request: 100 us alone
  CHECK(budget.Allowance() == Us(10));
  // Four periods of forty queued requests each: a plain mean would have grown the allowance
  // more than fivefold and, with it, the background work each period waits for.
  for (int i = 0; i < 4; ++i) period(40);
  CHECK(budget.Allowance() == Us(10));
  period(40);  // more than a tenth of the latest periods are long now
  CHECK(budget.Allowance() > Us(40));
}

TEST_CASE("Foreground kernels that ran faster than alone leave the background no more") {
  internal::SlowdownBudget budget(0.10, 0.99);
  const KernelShape shape = Kernel(1).shape;
  budget.KernelEnded(shape, Us(200), false);
  budget.PeriodEnded();
  REQUIRE(budget.Allowance() == Us(20));
  budget.KernelEnded(shape, Us(150), true);  // 50 us under its time alone: noise, not a credit
  CHECK(budget.Left() == Us(20));
  budget.Commit(Us(5));
  CHECK(budget.Left() == Us(15));
}

TEST_CASE_METHOD(Fixture, "A client's budget of 0 holds the background as priority does") {
  p.Budget(0, 1, {.slowdown = 0});
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(7))).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(200) == Actions{IssueOf(2, Ptb(0))});
  CHECK(p.Arrive(300, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(305, 2, Stopped(10)).empty());  // no first, narrow bound
}

TEST_CASE_METHOD(Fixture, "A budget changed to 0 stops what runs beside the foreground at once") {
  GrowToTwo();  // the background runs two workers wide beside the kernel issued at 600
  CHECK(p.policy().MeasuredSlowdown(Client(1)).has_value());
  // tally-ctl budget: not at the foreground kernel's end, which may be far off.
  CHECK(p.Budget(606, 1, {.slowdown = 0}) == Actions{PreemptOf(2)});
  // What was measured against the old budget is not shown against the new one.
  CHECK_FALSE(p.policy().MeasuredSlowdown(Client(1)).has_value());
  CHECK(p.End(610, 2, Stopped(40)).empty());  // held while the foreground runs
  CHECK(p.End(700, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(800) == Actions{IssueOf(2, Ptb(0))});
}

TEST_CASE(
    "The percentile over periods tolerates the rare slow one the budget's percentile allows") {
  using Verdict = internal::SlowdownBudget::Verdict;
  internal::SlowdownBudget budget(0.10, 0.99);
  const KernelShape shape = Kernel(1).shape;
  const auto period = [&](int64_t us, bool beside) {
    budget.KernelEnded(shape, std::chrono::microseconds(us), beside);
    return budget.PeriodEnded();
  };
  CHECK(period(100, false) == Verdict::kGrew);  // a first, narrow bound
  for (int i = 0; i < 99; ++i) period(105, true);
  CHECK(budget.bound() == 1.0);
  // A period 15% over: its kernel stops what runs beside it at once...
  CHECK(budget.KernelEnded(shape, std::chrono::microseconds(115), true) == Verdict::kStopped);
  CHECK(budget.bound() == 0);
  // ...but one period in a hundred over the budget is within a p99 budget...
  CHECK(budget.PeriodEnded() == Verdict::kNone);
  CHECK(budget.bound() == 1.0);
  CHECK(*budget.measured() == Approx(0.05));
  // ...two are not.
  CHECK(period(115, true) == Verdict::kShrank);
  CHECK(budget.bound() == 0.5);
}

TEST_CASE("At budget 0 every decision is priority's") {
  FakeAdvisor advisor;
  // Times alone known: at budget 0 none fits, so none runs unshaped.
  advisor.choices[KernelId(4)] = {LaunchForm::Original(), /*short_turnaround=*/true, Us(15)};
  advisor.choices[KernelId(9)] = {LaunchForm::Sliced(4), true, Us(1)};
  advisor.fallback.original_time = Us(1);
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
