// The simulator as a driver of the policy contract, against hand-computed timelines on a two-SM
// device (16 slots for 256-thread blocks; 1 us launch and preemption latencies, 5 us from a
// kernel's end to the driver knowing): a job alone; a sliced kernel, also in slices of a size; a
// foreground request preempting a background PTB kernel under the priority policy with the oracle
// advisor; a PTB kernel resumed narrower than it started.
#include "benchmarks/sim/simulator.h"

#include <catch2/catch.hpp>

#include "benchmarks/sim/oracle_advisor.h"
#include "benchmarks/sim/test_device.h"

namespace tally::sim {
namespace {

using std::chrono::microseconds;

using testing::TwoSms;

JobTrace OneKernel(const std::string& name, uint32_t blocks, int64_t block_us) {
  TraceKernel k;
  k.name = name;
  k.grid = {blocks, 1, 1};
  k.block = {256, 1, 1};
  k.block_time = microseconds(block_us);
  k.ptb_slowdown = 1.0;
  return {.name = name, .kind = "inference", .kernels = {k}};
}

JobSpec Request(JobTrace trace, int64_t at_us, ClientPriority priority) {
  return {.name = trace.name,
          .priority = priority,
          .trace = std::move(trace),
          .open_loop = true,
          .arrivals = {Time{microseconds(at_us)}}};
}

SimOptions Options() {
  return {.device = TwoSms(),
          .duration = std::chrono::milliseconds(1),
          .drain = std::chrono::milliseconds(1)};
}

TEST_CASE("A job alone takes its trace's alone time") {
  JobTrace trace = OneKernel("a", 40, 10);
  trace.kernels.push_back(trace.kernels[0]);
  trace.kernels[1].grid = {8, 1, 1};
  trace.launch_gap = microseconds(3);
  auto policy = scheduler::MakeFifoPolicy();
  auto outcome = Simulate(Options(), {Request(trace, 0, ClientPriority::High())}, *policy);
  REQUIRE(outcome.ok());
  REQUIRE(outcome->jobs[0].latencies.size() == 1);
  // 1 us launch, 3 waves (30 us), one more wave (10 us), 5 us to learn of the end.
  CHECK(outcome->jobs[0].latencies[0] == microseconds(46));
  CHECK(AloneTime(trace, TwoSms()) == microseconds(46));
}

TEST_CASE("A sliced kernel runs slice after slice, each reported before the next is issued") {
  const JobTrace trace = OneKernel("a", 32, 10);
  auto original = scheduler::MakeFifoPolicy();
  auto sliced = scheduler::MakeValidationPolicy(scheduler::LaunchForm::Sliced(2), false);
  auto whole = Simulate(Options(), {Request(trace, 0, ClientPriority::High())}, *original);
  auto pieces = Simulate(Options(), {Request(trace, 0, ClientPriority::High())}, *sliced);
  REQUIRE(whole.ok());
  REQUIRE(pieces.ok());
  CHECK(whole->jobs[0].latencies[0] == microseconds(26));  // 1 + 2 waves of 10 + 5
  // Slice 1 at 1-11, known at 16; slice 2 at 17-27, known at 32.
  CHECK(pieces->jobs[0].latencies[0] == microseconds(32));
  // Slices of a size (priority-budget's): 24 blocks (two waves, 1-21, known at 26), then the 8
  // left (one wave, 27-37, known at 42).
  auto sized = scheduler::MakeValidationPolicy(scheduler::LaunchForm::Slice(24), false);
  auto sized_pieces = Simulate(Options(), {Request(trace, 0, ClientPriority::High())}, *sized);
  REQUIRE(sized_pieces.ok());
  CHECK(sized_pieces->jobs[0].latencies[0] == microseconds(42));
}

TEST_CASE("A foreground request preempts the background PTB kernel at a task boundary") {
  const DeviceSpec device = TwoSms();
  OracleAdvisor advisor(device, microseconds(100));
  JobTrace background = OneKernel("train", 320, 10);  // 20 waves: 200 us, too long to run whole
  background.kind = "training";
  advisor.Add(SimKernelId(1, 0), background.kernels[0]);
  // The oracle picks PTB with 16 workers: 200 us, 10 us per task.
  CHECK(advisor.Choose(KernelInfoOf(device, background.kernels[0], SimKernelId(1, 0))).form ==
        scheduler::LaunchForm::Preemptible(16));
  auto policy = scheduler::MakePriorityPolicy({}, advisor);
  std::vector<JobSpec> jobs = {
      Request(OneKernel("infer", 16, 10), 45, ClientPriority::High()),
      {.name = "train", .priority = ClientPriority::BestEffort(), .trace = background}};
  auto outcome = Simulate(Options(), std::move(jobs), *policy);
  REQUIRE(outcome.ok());
  // The PTB rounds run 1-11, ..., 41-51; the flag raised at 45 is seen at 51, when the
  // workers give the SMs to the foreground kernel (51-61, known at 66).
  CHECK(outcome->preemptions == 1);
  CHECK(outcome->turnarounds == std::vector<Duration>{microseconds(6)});
  CHECK(outcome->jobs[0].latencies == std::vector<Duration>{microseconds(21)});
  CHECK(outcome->jobs[1].completed_in_window > 0);
  CHECK(outcome->risky_launches == 0);
}

// Issues its one client's kernel as PTB with 16 workers, preempts it at 15 us and resumes it
// with 2: the resumption's width is the policy's, not the start's.
class NarrowingPolicy final : public scheduler::Policy {
 public:
  void ClientJoined(Time, ClientId, ClientPriority, scheduler::Decisions&) override {}
  void ClientLeft(Time, ClientId, scheduler::Decisions&) override {}
  void PriorityChanged(Time, ClientId, ClientPriority, scheduler::Decisions&) override {}
  void HeadArrived(Time, ClientId client, const scheduler::Head&,
                   scheduler::Decisions& out) override {
    client_ = client;
    out.Issue(client, scheduler::LaunchForm::Preemptible(16));
    out.WakeAt(microseconds(15));
  }
  void RunEnded(Time, ClientId client, const scheduler::RunEnd& end,
                scheduler::Decisions& out) override {
    if (!end.finished) out.Issue(client, scheduler::LaunchForm::Preemptible(2));
  }
  void Woken(Time, scheduler::Decisions& out) override { out.Preempt(client_); }
  bool UsesTransformedForms() const override { return true; }

 private:
  ClientId client_;
};

TEST_CASE("A PTB kernel resumes with the workers its resumption is issued with") {
  NarrowingPolicy policy;
  auto outcome = Simulate(
      Options(), {Request(OneKernel("train", 64, 10), 0, ClientPriority::BestEffort())}, policy);
  REQUIRE(outcome.ok());
  // 16 workers run 1-11 and 11-21 (the flag raised at 15 is seen at 16): 32 tasks, known at 26.
  // Resumed at 27 with 2 workers: 16 rounds of the 32 tasks left, to 187, known at 192.
  CHECK(outcome->preemptions == 1);
  CHECK(outcome->jobs[0].latencies == std::vector<Duration>{microseconds(192)});
}

}  // namespace
}  // namespace tally::sim
