// What the profiler knows of one launch configuration: its candidates, the recent measurements
// of each form, and the rules that turn them into the next probe or the choice. Not
// thread-safe: the Profiler serialises access.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "profiler/types.h"
#include "scheduler/form_advisor.h"

namespace tally::profiler::internal {

// A total order of launch configurations, for stable listings.
inline auto ShapeOrder(const scheduler::KernelShape& s) {
  return std::tuple(s.kernel, s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z,
                    s.shared_bytes);
}

// Measurements kept per form (the window the estimates are taken over), and how many a form
// collects before its runs are no longer worth timing.
inline constexpr size_t kKeptSamples = 5;
inline constexpr size_t kWantedSamples = 3;
// Where no candidate's turnaround is under the threshold, those within this factor of the
// smallest compete on speed. On an H100 the candidates of a kernel of ~180 us blocks measured
// 178-190 us each, while their times differed 3.7x (docs/gpu-check.md): the strictly smallest
// turnaround bought 7% of preemption latency with most of the throughput.
inline constexpr double kFallbackTurnaroundSlack = 1.25;

// The last kKeptSamples measurements of one form, oldest first.
class Samples {
 public:
  void Add(Duration time, Duration turnaround);
  bool empty() const { return times_.empty(); }
  size_t size() const { return times_.size(); }
  std::span<const Duration> times() const { return times_; }
  std::span<const Duration> turnarounds() const { return turnarounds_; }

  // The minimum: other clients' kernels sharing the device only ever slow a run down, so the
  // fastest recent run is the closest to the form's own cost, and candidates measured under
  // different interference compare fairly.
  Duration Time() const;
  // The upper median: the turnaround bounds the wait of more important work, so it must not
  // rest on the luckiest run, and one disturbed run does not move it.
  Duration Turnaround() const;

 private:
  std::vector<Duration> times_;
  std::vector<Duration> turnarounds_;
};

class ShapeProfile {
 public:
  explicit ShapeProfile(const scheduler::KernelInfo& info);

  const scheduler::KernelInfo& info() const { return info_; }
  // Takes the server's current view of the kernel (forms, occupancy): the candidates follow it,
  // measurements of forms that remain candidates are kept.
  void Update(const scheduler::KernelInfo& info);

  const std::string& name() const { return name_; }
  void set_name(std::string_view name) { name_ = name; }

  // The form of the next launch: the untried (or least tried) unmeasured candidate while there
  // is one, counted as tried; then the choice (Current).
  scheduler::FormChoice Choose(Duration threshold);
  // The choice from what is measured so far. With candidates: among the measured candidates
  // and the original form, the fastest whose turnaround is under `threshold`; if none is, the
  // fastest candidate whose turnaround is within kFallbackTurnaroundSlack of the smallest (never
  // the original); if nothing is measured, the first candidate. Without candidates: the
  // original form, short when measured under it.
  scheduler::FormChoice Current(Duration threshold) const;
  bool WantsMeasurement(const scheduler::LaunchForm& form, Duration threshold) const;
  // Keeps a measurement of the original form or of a candidate; false (ignored) for any other
  // form and for negative durations.
  bool Record(const Measurement& measurement);
  // Any measurement of any form.
  bool Measured() const;
  // Every candidate measured (without candidates: the original form measured).
  bool Complete() const;
  // The kernel's time alone in its original form: measured, or until it is, estimated by the
  // fastest measured candidate (which runs the same blocks and the transformation's overhead,
  // and whose minimum over recent runs leaves out most interference). Unknown before either.
  std::optional<Duration> TimeAlone() const;
  ProfileRecord Describe(Duration threshold) const;

  const Samples& original() const { return original_; }
  struct Form {
    scheduler::LaunchForm form;
    Samples samples;
    uint32_t tries = 0;  // launches Choose gave this form while it was unmeasured
  };
  // One per candidate, in the candidates' order.
  std::span<const Form> forms() const { return forms_; }

 private:
  // PTB with as many workers as full occupancy gives is the full-occupancy candidate (workers 0).
  scheduler::LaunchForm Canonical(scheduler::LaunchForm form) const;
  // The candidate `form` stands for, if any.
  std::optional<size_t> IndexOf(const scheduler::LaunchForm& form) const;
  bool OriginalShort(Duration threshold) const;
  // The fastest measured candidate (and the original form, when `with_original` and it is
  // short) whose turnaround is under `threshold`.
  std::optional<scheduler::FormChoice> FastestUnder(Duration threshold, bool with_original) const;

  scheduler::KernelInfo info_;
  std::string name_;
  Samples original_;  // turnaround = time: the original form gives nothing back until it ends
  std::vector<Form> forms_;
};

}  // namespace tally::profiler::internal
