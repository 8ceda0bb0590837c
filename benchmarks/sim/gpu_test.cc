// The GPU model against hand-computed timelines on a two-SM device (8 blocks of 256 threads
// per SM, 1 us launch and preemption latencies): one kernel; two kernels sharing the SMs; a
// high-priority stream overtaking waiting blocks; a preempted PTB kernel; occupancy limits.
#include "benchmarks/sim/gpu.h"

#include <catch2/catch.hpp>

#include "benchmarks/sim/test_device.h"

namespace tally::sim {
namespace {

using std::chrono::microseconds;

using testing::TwoSms;

LaunchSpec Blocks(uint64_t stream, uint64_t blocks, int64_t us, bool high = false) {
  return {.stream = stream,
          .high_priority = high,
          .resources = {256, 32, 0},
          .units = blocks,
          .unit_time = microseconds(us)};
}

struct Fixture {
  EventQueue events;
  std::map<uint64_t, LaunchEnd> ends;
  Gpu gpu{TwoSms(), events, [this](const LaunchEnd& end) { ends[end.launch] = end; }};
  void Run() {
    while (!events.empty()) events.RunNext();
  }
  void RunUntil(int64_t us) {
    while (!events.empty() && events.next_time() <= Time{microseconds(us)}) events.RunNext();
  }
  Time EndOf(uint64_t launch) { return ends.at(launch).time; }
};

constexpr Time At(int64_t us) { return Time{microseconds(us)}; }

TEST_CASE("Occupancy: the smallest of the SM's limits, with the register granularity") {
  const DeviceSpec a100;
  CHECK(ResidentBlocksPerSm(a100, {256, 32, 0}) == 8);       // threads
  CHECK(ResidentBlocksPerSm(a100, {256, 128, 32768}) == 2);  // registers
  CHECK(ResidentBlocksPerSm(a100, {128, 32, 49152}) == 3);   // shared memory (+1 KiB each)
  CHECK(ResidentBlocksPerSm(a100, {32, 16, 0}) == 32);       // blocks
  // 3 warps of 40 registers: 51 warps fit the register file, 48 at the 4-warp granularity.
  CHECK(ResidentBlocksPerSm(a100, {96, 40, 0}) == 16);
  CHECK(ResidentBlocksPerSm(a100, {2048, 32, 0}) == 0);  // more threads than a block may have
}

TEST_CASE_METHOD(Fixture, "One kernel runs in waves of the resident blocks") {
  // 16 slots: 40 blocks of 10 us are waves of 16, 16 and 8, after 1 us of launch latency.
  const uint64_t k = gpu.Launch(Blocks(0, 40, 10));
  Run();
  CHECK(EndOf(k) == At(31));
  CHECK(ends.at(k).units_done == 40);
  CHECK_FALSE(ends.at(k).stopped);
}

TEST_CASE_METHOD(Fixture, "Two kernels share the SMs: the later one takes the free slots") {
  // A takes 6 slots per SM (spread breadth first); B gets the 2 left per SM, 4 blocks a wave.
  const uint64_t a = gpu.Launch(Blocks(0, 12, 10));
  const uint64_t b = gpu.Launch(Blocks(1, 12, 4));
  Run();
  CHECK(EndOf(a) == At(11));
  CHECK(EndOf(b) == At(13));  // waves at 1, 5 and 9 (4 us each)
}

TEST_CASE_METHOD(Fixture, "Interference: a block starting beside other kernels' blocks is slower") {
  LaunchSpec b = Blocks(1, 4, 30);
  b.interference = 1.0;
  LaunchSpec a = Blocks(0, 24, 10);
  a.interference = 1.0;
  const uint64_t first = gpu.Launch(b);
  const uint64_t second = gpu.Launch(a);
  Run();
  // B started alone: 30 us. A's two waves of 12 each start beside B's 4 blocks, a quarter of
  // the device's warps: 10 us x 1.25 each.
  CHECK(EndOf(first) == At(31));
  CHECK(EndOf(second) == Time{microseconds(1) + 2 * std::chrono::nanoseconds(12'500)});
}

TEST_CASE_METHOD(Fixture, "Launches of one stream run one after the other") {
  const uint64_t a = gpu.Launch(Blocks(0, 4, 10));
  const uint64_t b = gpu.Launch(Blocks(0, 4, 10));
  Run();
  CHECK(EndOf(a) == At(11));
  CHECK(EndOf(b) == At(21));
}

TEST_CASE_METHOD(Fixture, "A high-priority stream's blocks overtake waiting blocks") {
  const uint64_t a = gpu.Launch(Blocks(0, 48, 10));
  RunUntil(5);
  const uint64_t b = gpu.Launch(Blocks(1, 16, 10, /*high=*/true));
  Run();
  // B waits for A's running wave (a running block always finishes), then goes first.
  CHECK(EndOf(b) == At(21));
  CHECK(EndOf(a) == At(41));
}

TEST_CASE_METHOD(Fixture, "Without priority the same blocks wait in launch order") {
  const uint64_t a = gpu.Launch(Blocks(0, 48, 10));
  RunUntil(5);
  const uint64_t b = gpu.Launch(Blocks(1, 16, 10));
  Run();
  CHECK(EndOf(a) == At(31));
  CHECK(EndOf(b) == At(41));
}

TEST_CASE_METHOD(Fixture, "A preempted PTB kernel stops at the next task boundary") {
  LaunchSpec ptb = Blocks(0, 40, 10);
  ptb.persistent = true;
  ptb.workers = 16;
  const uint64_t k = gpu.Launch(ptb);
  RunUntil(15);
  REQUIRE(gpu.Preempt(k));
  CHECK_FALSE(gpu.Preempt(k));  // already raised
  Run();
  // Tasks run at 1-11 and 11-21; the flag is visible from 16, so the workers stop at 21.
  CHECK(EndOf(k) == At(21));
  CHECK(ends.at(k).units_done == 32);
  CHECK(ends.at(k).stopped);
  // Resumed with the 8 tasks left: one round of 8 workers (the others find no task).
  ptb.units = 8;
  const uint64_t resumed = gpu.Launch(ptb);
  Run();
  CHECK(EndOf(resumed) == At(32));
  CHECK(ends.at(resumed).units_done == 8);
  CHECK_FALSE(ends.at(resumed).stopped);
}

TEST_CASE_METHOD(Fixture, "A PTB kernel preempted before it starts ends without running a task") {
  LaunchSpec ptb = Blocks(0, 40, 10);
  ptb.persistent = true;
  ptb.workers = 16;
  const uint64_t first = gpu.Launch(Blocks(0, 16, 10));  // the PTB kernel waits behind it
  const uint64_t k = gpu.Launch(ptb);
  RunUntil(3);
  REQUIRE(gpu.Preempt(k));
  Run();
  CHECK(EndOf(first) == At(11));
  CHECK(EndOf(k) == At(11));
  CHECK(ends.at(k).units_done == 0);
  CHECK(ends.at(k).stopped);
}

}  // namespace
}  // namespace tally::sim
