// Benchmark scenarios: TOML files a person writes (benchmarks/README.md describes the format):
// the jobs with their priorities, each with a kernel trace for simulated mode and a program
// with its arguments for live mode; the arrival process of the latency-critical jobs; the
// policies to compare; the loads; the run's length; and optional device and policy settings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/sim/arrivals.h"
#include "benchmarks/sim/device.h"
#include "common/client_priority.h"
#include "scheduler/policy.h"

namespace tally::bench {

struct ScenarioJob {
  std::string name{};
  ClientPriority priority = ClientPriority::Unset();
  std::string trace{};                 // simulated mode: a trace file, resolved to a full path
  std::vector<std::string> command{};  // live mode: the program and its arguments
  // Open loop (requests at these arrivals, the rate set by the load); absent: closed loop.
  std::optional<sim::ArrivalSpec> arrivals{};
};

// Live mode on the emulated GPU: the device each `tally-server --emulate` of the run emulates,
// through the emulator's TALLY_EMU_* variables (emulator/README.md); unset, its defaults.
struct EmulatedDevice {
  std::optional<uint32_t> sm_count{};      // TALLY_EMU_SM_COUNT: virtual SMs
  std::optional<uint32_t> host_threads{};  // TALLY_EMU_HOST_THREADS: host threads running them
};

// The environment ("NAME=value") that gives tally-server --emulate this device.
std::vector<std::string> EmulatorEnvironment(const EmulatedDevice& device);

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  sim::Duration duration = std::chrono::seconds(2);
  uint64_t seed = 1;
  std::vector<std::string> policies;  // empty: every policy of the registry
  // Fractions of each open-loop job's capacity (1 / its request's time alone).
  std::vector<double> loads = {0.5};
  sim::DeviceSpec device;
  sim::Duration turnaround_threshold = std::chrono::microseconds(100);  // the oracle's
  scheduler::PriorityOptions priority;
  scheduler::TimeSliceOptions time_slice;
  scheduler::TgsOptions tgs;
  // priority-budget runs once per budget (0.05: the foreground may run 5% slower than alone).
  std::vector<double> slowdown_budgets = {0, 0.05, 0.10, 0.20};
  // Live mode: the runs alone of each open-loop job per load (the first before the policies'
  // runs, the others after them). Their p99s' spread is the noise of a rerun; the run of median
  // p99 is the reference the shared runs are compared with. Sim mode runs alone once: it is exact.
  int alone_runs = 1;
  EmulatedDevice emulator;  // [emulator]: live mode without --gpu only
  std::vector<ScenarioJob> jobs;
};

absl::StatusOr<Scenario> LoadScenario(const std::string& path);

// The scenario file `name_or_path` names: a path to a file, else a name as `tally-bench list`
// prints it (with or without ".toml") in `shipped_dir`. NotFound names both places looked in.
absl::StatusOr<std::string> FindScenario(const std::string& name_or_path,
                                         const std::string& shipped_dir);

}  // namespace tally::bench
