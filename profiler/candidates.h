// The forms the profiler tries for a launch configuration (docs/scheduling.md, "The
// profiler", candidates).
#pragma once

#include <vector>

#include "scheduler/types.h"

namespace tally::profiler {

// The candidate forms of `kernel`, distinct, in the order the profiler tries them:
// - with a PTB form: PTB at full occupancy first (workers 0: as many as can be resident, the
//   server resolves it), then PTB with b x sm_count workers for b = resident_per_sm - 1 down to
//   1, leaving out the counts that reach the number of blocks (they run as full occupancy);
// - with a sliced form: one wave per slice (a wave estimated as resident_per_sm x sm_count
//   blocks, at least 1), then half as many slices each time, down to 2.
// Empty for a kernel without transformed forms. With unknown occupancy (resident_per_sm or
// sm_count 0) PTB offers full occupancy alone, and a wave is one block.
std::vector<scheduler::LaunchForm> Candidates(const scheduler::KernelInfo& kernel);

// The number of PTB workers that full occupancy stands for (resident_per_sm x sm_count, at most
// the number of blocks), or 0 when the occupancy is unknown.
uint64_t FullOccupancyWorkers(const scheduler::KernelInfo& kernel);

}  // namespace tally::profiler
