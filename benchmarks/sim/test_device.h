// The small device the simulator's tests compute timelines on by hand: two A100-like SMs (16
// slots for 256-thread blocks of 32 registers), 1 us launch and preemption latencies, 5 us
// from a kernel's end to the driver knowing.
#pragma once

#include "benchmarks/sim/device.h"

namespace tally::sim::testing {

inline DeviceSpec TwoSms() {
  DeviceSpec d;
  d.sm_count = 2;
  d.launch_latency = std::chrono::microseconds(1);
  d.preempt_latency = std::chrono::microseconds(1);
  d.completion_latency = std::chrono::microseconds(5);
  return d;
}

}  // namespace tally::sim::testing
