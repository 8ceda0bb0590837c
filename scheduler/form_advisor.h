// How a policy learns which form a background kernel should run in: the profiler
// (profiler/) implements this from its measurements; tests and the simulator may use others.
#pragma once

#include "scheduler/types.h"

namespace tally::scheduler {

struct FormChoice {
  LaunchForm form;
  // The form's turnaround (how long the device takes to give its SMs back) is known to be
  // under the threshold. A transformed form is always usable; an original form that is not
  // known to be short may only run after a long idle period of the more important clients.
  bool short_turnaround = false;
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
