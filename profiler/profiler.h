// The transparent profiler (docs/scheduling.md, "The profiler"): for each launch
// configuration of a kernel that runs in the background, the candidate forms, their measured
// time and turnaround (how long the device takes to give its SMs back), the choice under the
// turnaround threshold, and a cache persisted across server runs. It is the priority policy's
// FormAdvisor: Choose names the candidate a launch should try while a shape is being profiled,
// then the chosen form.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "profiler/internal/shape_profile.h"
#include "profiler/types.h"
#include "scheduler/form_advisor.h"
#include "scheduler/types.h"

namespace tally::profiler {

struct ProfilerOptions {
  // A form qualifies when its turnaround is under this.
  Duration turnaround_threshold = std::chrono::microseconds(100);
  // The cache file; empty: nothing is loaded or saved.
  std::string cache_path;
  DeviceIdentity device;
};

// Thread-safe: the dispatcher calls Choose, WantsMeasurement and Record, another thread may call
// Snapshot and Save. One mutex guards the profiles; no call holds it for file I/O.
class Profiler final : public scheduler::FormAdvisor {
 public:
  // Loads the cache at options.cache_path when it exists. A file that cannot be read, is
  // corrupt, is of another format version or was written for another device identity is
  // ignored with one log line saying why, never trusted in part, and replaced at the next Save.
  static std::unique_ptr<Profiler> Create(ProfilerOptions options);

  // A shape not yet profiled tries its candidates, one per launch (Candidates' order: PTB at
  // full occupancy first), the least tried first when a run went unmeasured; then the fastest
  // form whose turnaround is under the threshold (the original form among them once measured
  // short), else the fastest candidate within 1.25x of the smallest turnaround (README.md says
  // why). A kernel without transformed forms gets its original form, short only once measured
  // under the threshold. The choice carries the kernel's time alone: the original form's
  // measured time, else the fastest measured candidate's (README.md, "Time alone").
  scheduler::FormChoice Choose(const scheduler::KernelInfo& kernel) override;
  // Whether a complete run of `kernel` in `form` is worth timing: the original form until it
  // has a few measurements; a candidate while the shape is being profiled, and the chosen form
  // until it has a few.
  bool WantsMeasurement(const scheduler::KernelInfo& kernel,
                        const scheduler::LaunchForm& form) const;
  // Learns from a complete run (never a preempted one). Measurements of a form that is not a
  // candidate, or with negative durations, are ignored. A non-empty `kernel_name` names the
  // shape in Snapshot.
  void Record(const scheduler::KernelInfo& kernel, std::string_view kernel_name,
              const Measurement& measurement);
  // Every launch configuration seen, by kernel name then shape.
  std::vector<ProfileRecord> Snapshot() const;
  // Writes the cache atomically (temporary file in the same directory, then rename), creating
  // its directories, when measurements changed since the last successful Save or the file
  // found at Create was ignored; otherwise does nothing. Meant for shutdown and a timer of a
  // few seconds; the write happens outside the lock, but call it off the dispatcher thread.
  absl::Status Save();

 private:
  explicit Profiler(ProfilerOptions options) : options_(std::move(options)) {}
  // The profile of `kernel`'s shape, made or brought up to date with `kernel`.
  internal::ShapeProfile& ProfileOf(const scheduler::KernelInfo& kernel);

  const ProfilerOptions options_;
  mutable std::mutex mutex_;
  absl::flat_hash_map<scheduler::KernelShape, internal::ShapeProfile> profiles_;  // by mutex_
  bool dirty_ = false;                                                            // by mutex_
  std::mutex save_mutex_;  // one Save at a time, so that an older one never renames last
};

}  // namespace tally::profiler
