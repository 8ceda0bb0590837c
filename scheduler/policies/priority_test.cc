// The priority policy on scripted events with a fake clock: exact actions for preemption on
// arrival, min-idle holding, three levels, side-by-side foreground clients, priority changes,
// resumption, starvation freedom, one slice at a time and the long-idle rule.
#include <catch2/catch.hpp>

#include "scheduler/testing/policy_harness.h"

namespace tally::scheduler {
namespace {

using namespace testing;
using Actions = std::vector<Action>;

const LaunchForm kPtb = LaunchForm::Preemptible();

struct Fixture {
  FakeAdvisor advisor;
  // min_idle 100 us, long_idle 10 ms.
  PolicyHarness p{MakePriorityPolicy({std::chrono::microseconds(100), std::chrono::milliseconds(10)},
                                     advisor)};
};

TEST_CASE_METHOD(Fixture, "A foreground arrival preempts the running background PTB kernel") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(7))) == Actions{IssueOf(2, kPtb)});
  CHECK(p.Arrive(50, 1, Head::Kernel(Kernel(8))) ==
        Actions{PreemptOf(2), Foreground(1, /*notify=*/true)});
  // The stopped kernel stays held while the foreground kernel runs...
  CHECK(p.End(60, 2, Stopped(10)).empty());
  // ...and resumes once the foreground has been idle for min_idle.
  CHECK(p.End(200, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.wake() == Us(300));
  CHECK(p.Wake(299).empty());
  CHECK(p.Wake(300) == Actions{IssueOf(2, kPtb)});
  CHECK(p.End(400, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(advisor.asked == 1);  // the resumption keeps the form the kernel started with
}

TEST_CASE_METHOD(Fixture, "Background work waits for min_idle of foreground idleness") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(20, 2, Head::Kernel(Kernel(2))).empty());  // the foreground kernel runs
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.wake() == Us(200));
  // The next request's kernel comes within min_idle: the background kernel is still held.
  CHECK(p.Arrive(180, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Wake(200).empty());
  CHECK(p.End(250, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(349).empty());
  CHECK(p.Wake(350) == Actions{IssueOf(2, kPtb)});
}

TEST_CASE_METHOD(Fixture, "Three levels: each waits for every level above it") {
  p.Join(0, 1, ClientPriority::Level(5));
  p.Join(0, 2, kHigh);
  p.Join(0, 3, kBestEffort);
  CHECK(p.Arrive(0, 3, Head::Kernel(Kernel(3))) == Actions{IssueOf(3, kPtb)});
  // Level 1 is background to level 5 (connected, idle): it preempts level 0 and runs shaped.
  CHECK(p.Arrive(10, 2, Head::Kernel(Kernel(2))) == Actions{PreemptOf(3), IssueOf(2, kPtb)});
  CHECK(p.Arrive(20, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  CHECK(p.End(25, 3, Stopped(5)).empty());
  CHECK(p.End(30, 2, Stopped(3)).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(200) == Actions{IssueOf(2, kPtb)});  // level 0 still waits for level 1
  CHECK(p.End(300, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.wake() == Us(400));
  CHECK(p.Wake(400) == Actions{IssueOf(3, kPtb)});
}

TEST_CASE_METHOD(Fixture, "Clients of the top level run side by side") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kHigh);
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1)});
  CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2)});
  // With a lower client connected, their kernels' ends are needed (notify), nothing waits.
  p.Join(2, 3, kBestEffort);
  CHECK(p.Arrive(3, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(4, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2, true)});
}

TEST_CASE_METHOD(Fixture, "A priority change takes effect at the next decision") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(2))) == Actions{IssueOf(2, kPtb)});
  // Client 2 becomes the most important: client 1's work is now background and waits.
  CHECK(p.Change(10, 2, ClientPriority::Level(5)).empty());
  CHECK(p.Arrive(20, 1, Head::Kernel(Kernel(1))).empty());
  CHECK(p.End(30, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Wake(130) == Actions{IssueOf(1, kPtb)});
  // And back: client 1's arrival-time rank no longer matters, its level does.
  CHECK(p.Change(140, 1, ClientPriority::Level(9)).empty());
  CHECK(p.Arrive(150, 2, Head::Kernel(Kernel(2))).empty());  // 1 runs above it now
  CHECK(p.Change(160, 2, ClientPriority::Level(10)) == Actions{PreemptOf(1), Foreground(2, true)});
}

TEST_CASE_METHOD(Fixture, "Nothing starves once the foreground is idle") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  p.Join(0, 3, kBestEffort);
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(10, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.Arrive(20, 3, Head::Kernel(Kernel(3))).empty());
  CHECK(p.End(50, 1, Finished(FormKind::kOriginal)).empty());
  // Both background clients run side by side: each kernel is preemptible.
  CHECK(p.Wake(150) == Actions{IssueOf(2, kPtb), IssueOf(3, kPtb)});
  CHECK(p.End(160, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Arrive(161, 2, Head::Kernel(Kernel(2))) == Actions{IssueOf(2, kPtb)});
  // The foreground client leaves: the background clients are now the most important, and
  // their next kernels run unshaped (client 2's PTB kernel under way is not the next).
  CHECK(p.Leave(170, 1).empty());
  CHECK(p.End(180, 3, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Arrive(181, 3, Head::Kernel(Kernel(3))) == Actions{Foreground(3, true)});
}

TEST_CASE_METHOD(Fixture, "A best-effort client alone runs unshaped until a high one connects") {
  p.Join(0, 2, kBestEffort);
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2, true)});
  CHECK(advisor.asked == 0);
  // At most two of its kernels on the device at once: the third waits for the first's end.
  CHECK(p.Arrive(1, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2, true)});
  CHECK(p.Arrive(2, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.End(10, 2, Finished(FormKind::kOriginal)) == Actions{Foreground(2, true)});
  // A high-priority client connects: its kernel runs at once (the best-effort kernels already on
  // the device cannot be stopped, and finish first), and the next best-effort kernel waits
  // for min_idle above it, then runs in the advisor's form.
  p.Join(20, 1, kHigh);
  CHECK(p.Arrive(21, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(30, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(40, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(42, 2, Head::Kernel(Kernel(2))).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(200) == Actions{IssueOf(2, kPtb)});
  // The high client leaves: the best-effort client's next kernel is unshaped again.
  CHECK(p.End(210, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Leave(220, 1).empty());
  CHECK(p.Arrive(230, 2, Head::Kernel(Kernel(2))) == Actions{Foreground(2, true)});
}

TEST_CASE_METHOD(Fixture, "Shaping alone: a best-effort client alone runs preemptible kernels") {
  PolicyHarness p{MakePriorityPolicy({std::chrono::microseconds(100),
                                      std::chrono::milliseconds(10), ClientPriority::kHighLevel},
                                     advisor)};
  advisor.choices[KernelId(6)] = {LaunchForm::Original(), /*short_turnaround=*/false};
  p.Join(0, 2, kBestEffort);
  const Action alone_ptb = IssueOf(2, kPtb, false, /*foreground=*/true);
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(2))) == Actions{alone_ptb});
  CHECK(p.End(10, 2, Finished(FormKind::kPreemptible)).empty());
  // A kernel the advisor cannot shape runs in its original form: nobody is there to protect.
  CHECK(p.Arrive(11, 2, Head::Kernel(Kernel(6))) == Actions{Foreground(2, true)});
  CHECK(p.Arrive(12, 2, Head::Kernel(Kernel(2))) == Actions{alone_ptb});
  // A high-priority client that connects later stops it at once.
  p.Join(20, 1, kHigh);
  CHECK(p.Arrive(21, 1, Head::Kernel(Kernel(1))) == Actions{PreemptOf(2), Foreground(1, true)});
  // Clients of level high and above run in their original form when they are on top.
  PolicyHarness high(MakePriorityPolicy({.always_shape_below = ClientPriority::kHighLevel},
                                        advisor));
  high.Join(0, 1, kHigh);
  CHECK(high.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1)});
}

TEST_CASE_METHOD(Fixture, "Only a client below the top level (or shaped alone) waits for forms") {
  const Policy& policy = p.policy();
  p.Join(0, 2, kBestEffort);
  CHECK_FALSE(policy.WaitsForForms(Client(2)));  // alone: it runs unshaped
  p.Join(1, 1, kHigh);
  CHECK(policy.WaitsForForms(Client(2)));
  CHECK_FALSE(policy.WaitsForForms(Client(1)));  // the top level never waits
  p.Leave(2, 1);
  CHECK_FALSE(policy.WaitsForForms(Client(2)));
  CHECK_FALSE(policy.WaitsForForms(Client(9)));  // unknown
  PolicyHarness alone{
      MakePriorityPolicy({.always_shape_below = ClientPriority::kHighLevel}, advisor)};
  alone.Join(0, 2, kBestEffort);
  CHECK(alone.policy().WaitsForForms(Client(2)));  // its kernels run shaped even alone
  alone.Join(0, 1, kHigh);
  CHECK_FALSE(alone.policy().WaitsForForms(Client(1)));
  PolicyHarness unshaped{MakePriorityNoTransformPolicy({})};
  unshaped.Join(0, 2, kBestEffort);
  unshaped.Join(0, 1, kHigh);
  CHECK_FALSE(unshaped.policy().WaitsForForms(Client(2)));  // it has no forms to wait for
}

TEST_CASE_METHOD(Fixture, "A head announced unshaped, forms pending, waits for them once shaped") {
  KernelInfo pending = Kernel(7, 64, /*transformable=*/false);
  pending.forms_pending = true;
  p.Join(0, 2, kBestEffort);
  // Alone, the client's kernels run in their original form, at most two at once.
  CHECK(p.Arrive(0, 2, Head::Kernel(pending)) == Actions{Foreground(2, true)});
  CHECK(p.Arrive(1, 2, Head::Kernel(pending)) == Actions{Foreground(2, true)});
  CHECK(p.Arrive(2, 2, Head::Kernel(pending)).empty());
  // A high client connects: the third is background now, and is not run unshaped meanwhile.
  CHECK(p.Join(10, 1, kHigh).empty());
  CHECK(p.End(20, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.End(30, 2, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(50'000).empty());
  // Its forms made, it runs as the advisor says.
  CHECK(p.Update(50'010, 2, Head::Kernel(Kernel(7))) == Actions{IssueOf(2, kPtb)});
  // Back on top before its forms were made, a client runs such a head in its original form.
  CHECK(p.End(50'100, 2, Finished(FormKind::kPreemptible)).empty());
  CHECK(p.Arrive(50'110, 2, Head::Kernel(pending)).empty());
  CHECK(p.Leave(50'120, 1) == Actions{Foreground(2, true)});
}

TEST_CASE_METHOD(Fixture, "Slices are issued one at a time, and not while the foreground runs") {
  advisor.choices[KernelId(9)] = {LaunchForm::Sliced(4), true};
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  const LaunchForm sliced = LaunchForm::Sliced(4);
  CHECK(p.Arrive(0, 2, Head::Kernel(Kernel(9))) == Actions{IssueOf(2, sliced)});
  CHECK(p.End(10, 2, {FormKind::kSliced, false, 16, 64}) == Actions{IssueOf(2, sliced)});
  CHECK(p.Arrive(15, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(20, 2, {FormKind::kSliced, false, 32, 64}).empty());
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Wake(200) == Actions{IssueOf(2, sliced)});
  CHECK(p.End(210, 2, {FormKind::kSliced, false, 48, 64}) == Actions{IssueOf(2, sliced)});
  CHECK(p.End(220, 2, {FormKind::kSliced, true, 64, 64}).empty());
}

TEST_CASE_METHOD(Fixture, "Only kernels are held: other work of background clients goes at once") {
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.Arrive(1, 2, Head::Other()) == Actions{IssueOf(2)});
  CHECK(p.Arrive(2, 2, Head::Kernel(Kernel(2))).empty());
}

TEST_CASE_METHOD(Fixture, "An unshaped background kernel runs only if short, or after long_idle") {
  advisor.choices[KernelId(4)] = {LaunchForm::Original(), /*short_turnaround=*/true};
  advisor.choices[KernelId(5)] = {LaunchForm::Original(), /*short_turnaround=*/false};
  p.Join(0, 1, kHigh);
  p.Join(0, 2, kBestEffort);
  p.Join(0, 3, kBestEffort);
  CHECK(p.Arrive(0, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
  CHECK(p.End(100, 1, Finished(FormKind::kOriginal)).empty());
  CHECK(p.Arrive(110, 2, Head::Kernel(Kernel(4))).empty());
  CHECK(p.Arrive(120, 3, Head::Kernel(Kernel(5))).empty());
  CHECK(p.Wake(200) == Actions{IssueOf(2, LaunchForm::Original(), /*notify=*/true)});
  CHECK(p.wake() == Us(10'100));
  CHECK(p.Wake(10'100) ==
        Actions{IssueOf(3, LaunchForm::Original(), true, /*foreground=*/false, /*risky=*/true)});
  // An original-form background kernel cannot be preempted: it keeps the level busy instead.
  CHECK(p.Arrive(10'200, 1, Head::Kernel(Kernel(1))) == Actions{Foreground(1, true)});
}

TEST_CASE("Registry: names, and the errors for unknown names and a missing advisor") {
  std::vector<std::string_view> names;
  for (const PolicyDescription& d : PolicyDescriptions()) names.push_back(d.name);
  CHECK(names == std::vector<std::string_view>{"priority", "priority-budget",
                                               "priority-no-transform", "fifo", "time-slice", "mps",
                                               "mps-priority", "tgs"});
  // Only priority-budget spends slowdown budgets (tally-server refuses one above 0% otherwise).
  for (std::string_view name : names) CHECK(TakesBudgets(name) == (name == "priority-budget"));
  CHECK_FALSE(TakesBudgets("lottery"));
  auto unknown = MakePolicy("lottery", {});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message() ==
        "unknown policy 'lottery' (known: priority, priority-budget, priority-no-transform, fifo, "
        "time-slice, mps, mps-priority, tgs)");
  CHECK_FALSE(MakePolicy("priority", {}).ok());
  FakeAdvisor advisor;
  auto made = MakePolicy("priority", {.priority = {}, .advisor = &advisor});
  REQUIRE(made.ok());
  CHECK((*made)->UsesTransformedForms());
  CHECK_FALSE((*MakePolicy("fifo", {}))->UsesTransformedForms());
}

}  // namespace
}  // namespace tally::scheduler
