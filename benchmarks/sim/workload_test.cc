// Workloads as data: trace files round-trip and refuse what they cannot mean; generated traces
// take their target time alone and give each kernel its archetype's interference; arrival traces
// are ordered, within the horizon and near the asked mean rate.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

#include "benchmarks/sim/arrivals.h"
#include "benchmarks/sim/trace_gen.h"

namespace tally::sim {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST_CASE("A trace survives writing and reading") {
  ModelShape shape{.name = "m", .source = "test", .layers = 2, .target = milliseconds(1)};
  const JobTrace trace = GenerateInference(shape, DeviceSpec{});
  auto again = ParseTrace(TraceToJson(trace));
  REQUIRE(again.ok());
  REQUIRE(again->kernels.size() == trace.kernels.size());
  CHECK(again->name == "m");
  CHECK(again->kind == "inference");
  CHECK(again->launch_gap == trace.launch_gap);
  for (size_t i = 0; i < trace.kernels.size(); ++i) {
    CHECK(again->kernels[i].grid == trace.kernels[i].grid);
    CHECK(again->kernels[i].shared_bytes == trace.kernels[i].shared_bytes);
    // Durations are written to the nanosecond.
    CHECK(std::abs((again->kernels[i].block_time - trace.kernels[i].block_time).count()) <= 1);
  }
}

TEST_CASE("Trace errors name the field") {
  CHECK(ParseTrace("[]").status().message() == "trace: not a JSON object");
  CHECK(ParseTrace(R"({"name":"x","kind":"inference","kernels":[{"grid":1,"block":1,)"
                   R"("block_us":1,"colour":2}]})")
            .status()
            .message() == "kernel 0: unknown field 'colour'");
  CHECK(ParseTrace(R"({"name":"x","kind":"batch","kernels":[]})").status().message() ==
        "trace: 'kind' is 'inference' or 'training'");
  auto too_big = ParseTrace(
      R"({"name":"x","kind":"training","kernels":[{"grid":1,"block":1024,"registers":255,)"
      R"("block_us":1}]})");
  REQUIRE(too_big.ok());
  CHECK_FALSE(ValidateTrace(*too_big, DeviceSpec{}).ok());
}

TEST_CASE("Generated traces take their target time alone") {
  const DeviceSpec device;
  const JobTrace infer =
      GenerateInference({.name = "i", .layers = 12, .target = microseconds(1490)}, device);
  const JobTrace train =
      GenerateTraining({.name = "t", .layers = 16, .target = milliseconds(100)}, device);
  CHECK(std::abs((AloneTime(infer, device) - microseconds(1490)).count()) < 1000);
  CHECK(std::abs((AloneTime(train, device) - milliseconds(100)).count()) < 1000);
  CHECK(infer.kernels.size() == 48);
  CHECK(train.kernels.size() == 16 * 7 + 4);
}

TEST_CASE("Generated kernels carry their archetype's interference sensitivity") {
  // Matrix multiplications and convolutions keep the default; normalisations, activations and
  // optimizer steps (memory-bound) take 0.6 (trace_gen.cc cites the figure).
  const std::map<std::string, double> expected = {
      {"gemm_in", 0.5},     {"gemm_out", 0.5}, {"conv_fwd", 0.5}, {"conv_dgrad", 0.5},
      {"conv_wgrad", 0.5},  {"norm", 0.6},     {"norm_fwd", 0.6}, {"norm_bwd", 0.6},
      {"elementwise", 0.6}, {"act_fwd", 0.6},  {"act_bwd", 0.6},  {"optimizer", 0.6}};
  const DeviceSpec device;
  std::set<std::string> seen;
  for (const JobTrace& trace :
       {GenerateInference({.name = "i", .layers = 2, .target = milliseconds(1)}, device),
        GenerateTraining({.name = "t", .layers = 2, .target = milliseconds(10)}, device)}) {
    for (const TraceKernel& k : trace.kernels) {
      INFO(k.name);
      REQUIRE(expected.contains(k.name));
      CHECK(k.interference == expected.at(k.name));
      seen.insert(k.name);
    }
  }
  CHECK(seen.size() == expected.size());
}

TEST_CASE("Arrival traces keep their mean rate, in order, within the horizon") {
  for (ArrivalKind kind : {ArrivalKind::kPoisson, ArrivalKind::kBursty, ArrivalKind::kServerless}) {
    ArrivalSpec spec{.kind = kind, .rate = 500};
    const std::vector<Time> arrivals = GenerateArrivals(spec, std::chrono::seconds(20), 7);
    INFO(ArrivalKindName(kind));
    CHECK(std::is_sorted(arrivals.begin(), arrivals.end()));
    CHECK(arrivals.front() >= Time{0});
    CHECK(arrivals.back() < Time{std::chrono::seconds(20)});
    CHECK(arrivals.size() > 0.85 * 500 * 20);
    CHECK(arrivals.size() < 1.15 * 500 * 20);
    CHECK(GenerateArrivals(spec, std::chrono::seconds(20), 7) == arrivals);  // seeded
  }
  CHECK(ParseArrivalKind("uniform").status().message() ==
        "unknown arrivals 'uniform' (known: poisson, bursty, serverless)");
}

}  // namespace
}  // namespace tally::sim
