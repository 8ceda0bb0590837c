// Live mode's capacity of an open-loop job: one request's service time, from runs of the job
// alone in which a few requests arrive at once and are served in turn.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/sim/device.h"

namespace tally::bench {

// Calibration runs per open-loop job: the rest of the machine only ever adds time to a run, so
// the least disturbed of a few is taken (one run alone moved the rate 2.8x between runs of one
// scenario: benchmarks/RESULTS.md, "The live pair on 2 one-block SMs").
inline constexpr int kCalibrationRuns = 3;

// `runs`: per calibration run, its requests' latencies in µs in completion order (all arrived
// at once, so a latency is a completion time). Per run the median gap between two consecutive
// completions; the smallest of those medians, at least 1 µs. An error when no run completed two
// requests.
absl::StatusOr<sim::Duration> ServiceTime(const std::vector<std::vector<double>>& runs);

}  // namespace tally::bench
