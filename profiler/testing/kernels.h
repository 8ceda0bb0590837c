// Kernels and measurements for the profiler's tests.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>

#include "profiler/format.h"
#include "profiler/types.h"
#include "scheduler/testing/policy_harness.h"

namespace tally::profiler::testing {

using scheduler::KernelInfo;
using scheduler::LaunchForm;

inline Duration Us(int64_t micros) { return std::chrono::microseconds(micros); }

// scheduler::testing::Kernel (1-D, 128 threads per block, 8 SMs, 4 PTB blocks resident per SM)
// with each transformed form and the occupancy chosen.
inline KernelInfo Kernel(uint64_t id, uint32_t blocks, bool sliceable = true,
                         bool preemptible = true, uint32_t resident_per_sm = 4,
                         uint32_t sm_count = 8) {
  KernelInfo info = scheduler::testing::Kernel(id, blocks);
  info.sliceable = sliceable;
  info.preemptible = preemptible;
  info.resident_per_sm = resident_per_sm;
  info.sm_count = sm_count;
  return info;
}

inline Measurement Run(LaunchForm form, int64_t time_us, int64_t turnaround_us) {
  return {form, Us(time_us), Us(turnaround_us)};
}

inline Measurement OriginalRun(int64_t time_us) {
  return {LaunchForm::Original(), Us(time_us), Us(time_us)};
}

}  // namespace tally::profiler::testing

// Failed checks print forms as FormText spells them.
template <>
struct Catch::StringMaker<tally::scheduler::LaunchForm> {
  static std::string convert(const tally::scheduler::LaunchForm& form) {
    return tally::profiler::FormText(form);
  }
};
