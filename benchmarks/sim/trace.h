// Workloads as data: a job's kernel trace (the kernels of one inference request or training
// iteration, in launch order, with their shapes, resources and per-block durations), read from
// and written to JSON files (benchmarks/workloads/README.md describes the format).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/sim/device.h"
#include "scheduler/types.h"

namespace tally::sim {

struct TraceKernel {
  std::string name;
  scheduler::Dim3 grid;
  scheduler::Dim3 block;
  uint32_t registers_per_thread = 32;
  uint32_t shared_bytes = 0;  // per block, static and dynamic
  Duration block_time{0};     // one block in the original form, alone on its SM
  // A PTB worker's time per task, and a slice's time per block, against block_time: what the
  // profiler would measure as the forms' slowdown.
  double ptb_slowdown = 1.05;
  double sliced_slowdown = 1.0;
  bool transformable = true;  // has sliced and PTB forms
  // How much a block slows down beside other kernels' blocks (memory bandwidth and cache
  // contention): its time is multiplied by 1 + interference x the share of the device's warp
  // slots other kernels hold when it starts (sim/README.md, "Interference").
  double interference = kDefaultInterference;
  static constexpr double kDefaultInterference = 0.5;

  BlockResources resources() const {
    return {static_cast<uint32_t>(block.Count()), registers_per_thread, shared_bytes};
  }
};

struct JobTrace {
  std::string name{};
  std::string kind{};          // "inference" (a request) or "training" (an iteration)
  std::string source{};        // what the trace is calibrated to, with the citation
  std::string generated_by{};  // the command that wrote it
  // Host time between two launches of the job (the framework's launch overhead).
  Duration launch_gap{0};
  std::vector<TraceKernel> kernels{};
};

absl::StatusOr<JobTrace> ParseTrace(std::string_view json_text);
std::string TraceToJson(const JobTrace& trace);
absl::StatusOr<JobTrace> LoadTrace(const std::string& path);
absl::Status SaveTrace(const JobTrace& trace, const std::string& path);

// Refuses kernels that cannot run on `device` (no block fits on an SM) or are empty.
absl::Status ValidateTrace(const JobTrace& trace, const DeviceSpec& device);

// The job's time alone on an idle device: its kernels back to back on one stream, each in as
// many waves as the device's resident blocks make, plus the launch and completion latencies.
Duration AloneTime(const JobTrace& trace, const DeviceSpec& device);

}  // namespace tally::sim
