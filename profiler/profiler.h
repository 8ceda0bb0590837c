// The transparent profiler (../shared/SCHEDULING.md, "The profiler"): for each launch
// configuration of a kernel that runs in the background, the candidate forms, their measured
// time and turnaround (how long the device takes to give its SMs back), the choice under the
// turnaround threshold, and a cache persisted across server runs. It is the priority policy's
// FormAdvisor: Choose names the candidate a launch should try while a shape is being profiled,
// then the chosen form.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/form_advisor.h"
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

struct ProfilerOptions {
  // A form qualifies when its turnaround is under this.
  Duration turnaround_threshold = std::chrono::microseconds(100);
  // The cache file; empty: nothing is loaded or saved.
  std::string cache_path;
  DeviceIdentity device;
};

// One complete run of a kernel in one form, measured with events on the launch's own stream:
// `time` is the kernel's whole time on the device in that form (for a sliced kernel the sum of
// its slices), `turnaround` the longest stretch during which it could not give the device back
// (one slice; one task of a PTB worker; the whole kernel in its original form).
struct Measurement {
  scheduler::LaunchForm form;
  Duration time{0};
  Duration turnaround{0};
};

// What `tally-ctl profiles` lists for one launch configuration.
struct ProfileRecord {
  scheduler::KernelShape shape;
  std::string kernel_name;
  std::optional<Duration> original_time;  // unknown until measured alone
  scheduler::LaunchForm chosen;
  bool complete = false;  // every candidate measured
  // Of the chosen form: original time / its time (or, without an original time, the fastest
  // preemptible candidate's time / its time), and its turnaround.
  double normalized_speed = 0;
  Duration turnaround{0};
};

class Profiler final : public scheduler::FormAdvisor {
 public:
  // Loads the cache at options.cache_path when it exists; a corrupt or foreign file is ignored
  // with one log line, never trusted.
  static std::unique_ptr<Profiler> Create(ProfilerOptions options);

  scheduler::FormChoice Choose(const scheduler::KernelInfo& kernel) override;
  // Whether a run of `kernel` in `form` should be timed (its shape is still being profiled, or
  // its original time is unknown).
  bool WantsMeasurement(const scheduler::KernelInfo& kernel,
                        const scheduler::LaunchForm& form) const;
  void Record(const scheduler::KernelInfo& kernel, std::string_view kernel_name,
              const Measurement& measurement);
  std::vector<ProfileRecord> Snapshot() const;
  // Writes the cache atomically (temporary file, then rename); called on shutdown and after
  // profiles change, at most every few seconds.
  absl::Status Save() const;

 private:
  // ...
};

}  // namespace tally::profiler
