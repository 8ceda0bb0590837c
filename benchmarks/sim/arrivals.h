// Request arrival traces for open-loop jobs: Poisson; bursty on/off; and the shape of public
// serverless invocation traces (Shahrad et al., "Serverless in the Wild", USENIX ATC'20, on
// Azure Functions: invocation rates vary widely from one time bucket to the next, with bursts
// far above the mean). All are seeded, so a scenario repeats exactly.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/sim/device.h"

namespace tally::sim {

enum class ArrivalKind : uint8_t { kPoisson, kBursty, kServerless };

absl::StatusOr<ArrivalKind> ParseArrivalKind(std::string_view name);
std::string_view ArrivalKindName(ArrivalKind kind);

struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kPoisson;
  double rate = 100;  // mean requests per second over the whole trace
  // Bursty: on and off periods of exponentially distributed length with these means; requests
  // arrive only while on, at rate * (on + off) / on.
  Duration on_mean = std::chrono::milliseconds(50);
  Duration off_mean = std::chrono::milliseconds(50);
  // Serverless: the rate is redrawn every bucket as rate * X, X log-normal with mean 1 and this
  // sigma (heavy-tailed bucket counts). ATC'20 reports per-minute buckets; a simulated run lasts
  // seconds, so the bucket is shorter by default.
  Duration bucket = std::chrono::milliseconds(100);
  double sigma = 1.0;
};

// Arrival times in [0, horizon), ascending.
std::vector<Time> GenerateArrivals(const ArrivalSpec& spec, Duration horizon, uint64_t seed);

}  // namespace tally::sim
