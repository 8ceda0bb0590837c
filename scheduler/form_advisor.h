// How a policy learns which form a background kernel should run in: the profiler
// (profiler/) implements this from its measurements; tests and the simulator may use others.
#pragma once

#include <optional>

#include "scheduler/types.h"

namespace tally::scheduler {

struct FormChoice {
  LaunchForm form;
  // The form's turnaround (how long the device takes to give its SMs back) is known to be
  // under the threshold. A transformed form is always usable; an original form that is not
  // known to be short may only run after a long idle period of the more important clients.
  bool short_turnaround = false;
  // How long the whole kernel takes in its original form alone on the device, when known
  // (computed by the simulator's oracle; the profiler's measurement, or until it has one, its
  // estimate from the kernel's transformed forms: profiler/README.md). `priority-budget` runs a
  // background kernel in its original form when this fits what its budget allows, and sizes its
  // slices with it.
  std::optional<Duration> original_time = std::nullopt;
};

class FormAdvisor {
 public:
  virtual ~FormAdvisor() = default;
  // The form for a launch of `kernel` that runs while more important clients are connected.
  // Never the original form of a kernel that has a preemptible or sliced form until it is
  // known to be short.
  virtual FormChoice Choose(const KernelInfo& kernel) = 0;
};

}  // namespace tally::scheduler
