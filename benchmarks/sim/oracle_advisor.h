// The simulator's FormAdvisor for the priority policy: an oracle that knows each kernel's trace
// entry and computes, with the device model, what the profiler would measure for each candidate
// form alone on the device (its time, and its turnaround: one PTB task, one slice, or the whole
// original kernel), then chooses as SCHEDULING.md's profiler does. It is the stand-in for
// profiler::Profiler, which any other FormAdvisor can replace (Simulate takes the policy, and
// the policy takes the advisor). Unlike the profiler, it never spends launches on measuring.
#pragma once

#include <map>

#include "benchmarks/sim/device.h"
#include "benchmarks/sim/trace.h"
#include "scheduler/form_advisor.h"

namespace tally::sim {

// One candidate form as the oracle estimates it.
struct FormEstimate {
  scheduler::LaunchForm form;
  Duration time{0};        // the whole kernel in this form, alone on the device
  Duration turnaround{0};  // the longest stretch it cannot give the SMs back
};

class OracleAdvisor final : public scheduler::FormAdvisor {
 public:
  OracleAdvisor(const DeviceSpec& device, Duration turnaround_threshold)
      : device_(device), threshold_(turnaround_threshold) {}

  // Tells the oracle about a kernel (KernelShape::kernel == id); unknown kernels get PTB at full
  // occupancy, the profiler's choice before it has measured anything.
  void Add(KernelId id, const TraceKernel& kernel) { kernels_[id] = kernel; }

  scheduler::FormChoice Choose(const scheduler::KernelInfo& kernel) override;

  // The candidates of SCHEDULING.md's profiler, original first.
  std::vector<FormEstimate> Candidates(const TraceKernel& kernel) const;

 private:
  const DeviceSpec device_;
  const Duration threshold_;
  std::map<KernelId, TraceKernel> kernels_;
};

}  // namespace tally::sim
