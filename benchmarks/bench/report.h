// The metrics of a benchmark result and their presentations: the JSON file (every sample kept,
// with the metrics computed from them) and the Markdown table printed at the end of a run.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/bench/runner.h"

namespace tally::bench {

// Nearest-rank percentile (p in [0, 100]) of `samples`; 0 for none.
double Percentile(std::vector<double> samples, double p);

// One policy's figures at one load.
struct PolicySummary {
  std::string policy;
  // Foreground open-loop jobs, averaged over them: latency against the same requests alone.
  double fg_p50_us = 0, fg_p95_us = 0, fg_p99_us = 0;
  double fg_p99_overhead = 0;    // p99 / alone p99 - 1
  double bg_throughput = 0;      // background jobs' normalised throughputs, summed
  double system_throughput = 0;  // every job's normalised throughput, summed
  uint64_t preemptions = 0;
  double turnaround_p99_us = 0;
};

std::vector<PolicySummary> Summarise(const BenchResult& result, const LoadRun& load);

// Live, with the foreground's open-loop jobs run alone more than once: the spread of their p99s
// alone (largest / smallest - 1, averaged over those jobs), the noise of a rerun against which a
// policy's p99 overhead is judged; none otherwise.
std::optional<double> AloneP99Spread(const BenchResult& result, const LoadRun& load);

// `command` is the command line that produced the result, recorded in it.
nlohmann::ordered_json ResultToJson(const BenchResult& result, const std::string& command);
std::string MarkdownReport(const BenchResult& result);

}  // namespace tally::bench
