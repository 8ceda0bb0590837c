// Runs a scenario in simulated mode: per load, each job alone (the reference) and all jobs
// together under each policy, keeping every sample for the report.
#pragma once

#include <functional>
#include <optional>
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
  // Sim: each preemption's decision to SMs free. Live: the turnaround the server's profiler
  // measured for each launch configuration it knows.
  std::vector<double> turnarounds_us;
  // Live: the preemptions whose latency the server measured on the device, mean and max.
  uint64_t preemption_latencies = 0;
  double preemption_latency_mean_us = 0, preemption_latency_max_us = 0;
  uint64_t risky_launches = 0;
  // Live: the launch configurations the server's profiler knew when the jobs began (from the
  // profile cache the run's servers share).
  uint64_t profiles_at_start = 0;
  // Live, priority-budget: the foreground's slowdown as the server's policy last measured it (at
  // its budget's percentile, per busy period); none while unmeasured.
  std::optional<double> measured_slowdown;
  uint64_t events = 0;  // sim: events simulated
  double wall_s = 0;    // real time the run took
};

struct LoadRun {
  double load = 0;
  std::vector<double> rates;  // per job: mean requests per second (0: closed loop)
  std::vector<JobRun> alone;  // each job alone on the device (live: the reference run)
  // Live: per job, the p99 latency of each of its runs alone, in the order they ran (empty for a
  // closed-loop job).
  std::vector<std::vector<double>> alone_p99s_us;
  std::vector<PolicyRun> runs;
};

struct BenchResult {
  std::string mode = "sim";  // or "live"
  std::string device;        // the simulated device, or the one the live server names
  // Live: the variables ("NAME=value") the servers got beyond ours (the scenario's [emulator],
  // not with --gpu).
  std::vector<std::string> server_environment{};
  Scenario scenario;
  std::vector<std::string> policies;
  // Per job: one request or iteration alone (live: a request's measured service time, or a
  // closed-loop job's time per unit of work).
  std::vector<sim::Duration> alone_times;
  std::vector<LoadRun> loads;
};

// What one run of a policy is: its label in the results, the policy, and (priority-budget) the
// slowdown budget its foreground gets. Both modes run priority-budget once per budget of the
// scenario, labelled "priority-budget 5%" and so on; every other policy once, by its name.
struct PolicyVariant {
  std::string label;
  std::string policy;
  double budget = 0;
};
std::vector<PolicyVariant> PolicyVariants(const Scenario& scenario,
                                          const std::vector<std::string>& policies);

// Simulated mode. `progress` is told what runs next, with the step's number and the total.
absl::StatusOr<BenchResult> RunSimulated(
    const Scenario& scenario, const std::vector<std::string>& policies,
    const std::function<void(int step, int steps, const std::string& what)>& progress);

// The jobs at the scenario's highest priority level: the foreground, whose latency is protected.
std::vector<bool> ForegroundJobs(const Scenario& scenario);

}  // namespace tally::bench
