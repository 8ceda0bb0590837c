// What the profiler is told and what it tells: the device its profiles are valid for, one
// measured run, and one launch configuration's profile as `tally-ctl profiles` lists it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "scheduler/types.h"

namespace tally::profiler {

using scheduler::Duration;

// What the cache is valid for: profiles of another device, driver or transformation version
// are not used.
struct DeviceIdentity {
  std::string name;
  uint32_t sm_count = 0;
  uint32_t compute_capability = 0;  // major * 10 + minor
  int32_t driver_version = 0;
  uint32_t transform_version = 0;
  friend bool operator==(const DeviceIdentity&, const DeviceIdentity&) = default;
};

// One complete (never preempted) run of a kernel in one form, measured with events on the
// launch's own stream: `time` is the kernel's whole time on the device in that form (for a
// sliced kernel the sum of its slices), `turnaround` the longest stretch during which it could
// not give the device back: one slice; one task of a PTB worker (PtbTurnaround); ignored for the
// original form, whose turnaround is its time.
struct Measurement {
  scheduler::LaunchForm form;
  Duration time{0};
  Duration turnaround{0};
};

// The turnaround of a complete PTB run: the duration of one task (one original block) on a
// worker. `workers` is the resolved count (not 0), `tasks` the kernel's blocks. Each worker runs
// its tasks one after another, so a run of `time` is ceil(tasks / workers) tasks long; workers
// beyond the number of tasks have nothing to do. With 0 workers or tasks: `time` (no split).
Duration PtbTurnaround(Duration time, uint64_t workers, uint64_t tasks);

// What `tally-ctl profiles` lists for one launch configuration.
struct ProfileRecord {
  scheduler::KernelShape shape;
  std::string kernel_name;                // empty until a measurement named it
  std::optional<Duration> original_time;  // unknown until measured in the original form
  // The form launches get once profiling is done; while it is not, the best of the candidates
  // measured so far (the first candidate when none is).
  scheduler::LaunchForm chosen;
  // `chosen` may run while more important clients are connected (FormChoice::short_turnaround).
  bool short_turnaround = false;
  // Candidates of the shape and how many of them are measured. A kernel without transformed
  // forms has none, and is complete once its original form is measured.
  uint32_t candidates = 0;
  uint32_t measured = 0;
  bool complete = false;
  // Of `chosen`, once measured: original time / its time (without an original time, the fastest
  // measured candidate's time / its time), and its turnaround.
  std::optional<double> normalized_speed;
  std::optional<Duration> turnaround;
};

}  // namespace tally::profiler
