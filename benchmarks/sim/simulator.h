// The simulator: a driver of the scheduling policy contract (scheduler/policy.h) over the GPU
// model (gpu.h), in virtual time. Each job is a client with one ordered command queue fed from
// its kernel trace: an open-loop job serves requests at their arrival times, one at a time
// (a request's latency includes its wait behind earlier ones); a closed-loop job runs
// iterations back to back. The simulator announces queue heads, carries out Issue and Preempt
// actions on the GPU model, and reports run ends and wake-ups back to the policy.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/sim/device.h"
#include "benchmarks/sim/trace.h"
#include "common/client_priority.h"
#include "scheduler/policy.h"

namespace tally::sim {

struct JobSpec {
  // Defaults everywhere: designated initializers may leave any field out.
  std::string name{};
  ClientPriority priority = ClientPriority::Unset();
  JobTrace trace{};
  bool open_loop = false;
  std::vector<Time> arrivals{};  // open loop: request arrival times, ascending
};

struct SimOptions {
  DeviceSpec device;
  // The measurement window [0, duration): throughput counts progress within it; latencies
  // are of the requests that arrive within it.
  Duration duration = std::chrono::seconds(2);
  // How long past the window the simulator waits for those requests to complete.
  Duration drain = std::chrono::seconds(2);
};

struct JobOutcome {
  std::vector<Duration> latencies;   // open loop: arrival to completion, in arrival order
  uint64_t requests_arrived = 0;     // open loop, within the window
  uint64_t requests_unfinished = 0;  // of those, not completed by the end of the drain
  // Completed requests or iterations within the window; a closed-loop job's iteration under
  // way at the window's end counts by the fraction of its kernels done.
  double completed_in_window = 0;
};

struct SimOutcome {
  std::vector<JobOutcome> jobs;
  uint64_t preemptions = 0;           // preemption flags raised on PTB kernels
  std::vector<Duration> turnarounds;  // each: the preempt decision to the kernel's SMs free
  uint64_t risky_launches = 0;        // Action::risky launches carried out
  uint64_t events = 0;
};

// The id the simulator gives kernel `kernel` of job `job` (KernelShape::kernel), so that a
// FormAdvisor can be told about the kernels before the run.
inline KernelId SimKernelId(size_t job, size_t kernel) {
  return KernelId((uint64_t{job} + 1) << 32 | kernel);
}
scheduler::KernelInfo KernelInfoOf(const DeviceSpec& device, const TraceKernel& kernel,
                                   KernelId id);

// Runs the jobs under `policy` (fresh: it must not have seen clients before). Fails on a trace
// that cannot run on the device.
absl::StatusOr<SimOutcome> Simulate(const SimOptions& options, std::vector<JobSpec> jobs,
                                    scheduler::Policy& policy);

}  // namespace tally::sim
