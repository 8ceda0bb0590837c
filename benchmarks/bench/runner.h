// Runs a scenario in simulated mode: per load, each job alone (the reference) and all jobs
// together under each policy, keeping every sample for the report.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/bench/scenario.h"

namespace tally::bench {

struct JobRun {
  std::vector<double> latencies_us;  // open loop: every request, arrival to completion
  uint64_t unfinished = 0;           // open loop: requests not completed by the end
  double completed_per_s = 0;        // requests or iterations per second in the window
};

struct PolicyRun {
  std::string policy;
  std::vector<JobRun> jobs;  // in scenario order
  uint64_t preemptions = 0;
  std::vector<double> turnarounds_us;  // each preemption's decision to SMs free
  uint64_t risky_launches = 0;
  uint64_t events = 0;
  double wall_s = 0;  // real time the simulation took
};

struct LoadRun {
  double load = 0;
  std::vector<double> rates;  // per job: mean requests per second (0: closed loop)
  std::vector<JobRun> alone;  // each job alone on the device
  std::vector<PolicyRun> runs;
};

struct BenchResult {
  Scenario scenario;
  std::vector<std::string> policies;
  std::vector<sim::Duration> alone_times;  // per job: one request or iteration alone
  std::vector<LoadRun> loads;
};

// Simulated mode. `progress` is told what runs next, with the step's number and the total.
absl::StatusOr<BenchResult> RunSimulated(
    const Scenario& scenario, const std::vector<std::string>& policies,
    const std::function<void(int step, int steps, const std::string& what)>& progress);

// The jobs at the scenario's highest priority level: the foreground, whose latency is protected.
std::vector<bool> ForegroundJobs(const Scenario& scenario);

}  // namespace tally::bench
