// Candidate forms of a launch configuration: PTB worker counts by whole waves of SMs, and slice
// counts from one wave per slice down to two slices.
#include "profiler/candidates.h"

#include <algorithm>
#include <limits>

namespace tally::profiler {

using scheduler::KernelInfo;
using scheduler::LaunchForm;

namespace {

// A grid of zero blocks is not a valid launch; it counts as one so that no form is empty.
uint64_t Blocks(const KernelInfo& kernel) {
  return std::max<uint64_t>(kernel.shape.grid.Count(), 1);
}

}  // namespace

uint64_t FullOccupancyWorkers(const KernelInfo& kernel) {
  return std::min(uint64_t{kernel.resident_per_sm} * kernel.sm_count, Blocks(kernel));
}

std::vector<LaunchForm> Candidates(const KernelInfo& kernel) {
  std::vector<LaunchForm> candidates;
  const uint64_t blocks = Blocks(kernel);
  if (kernel.preemptible) {
    candidates.push_back(LaunchForm::Preemptible());
    if (kernel.resident_per_sm > 1 && kernel.sm_count > 0) {
      // b x sm_count < blocks: from there on every count is capped to the full grid.
      const uint64_t most =
          std::min<uint64_t>(kernel.resident_per_sm - 1, (blocks - 1) / kernel.sm_count);
      for (uint64_t b = most; b >= 1; --b) {
        candidates.push_back(LaunchForm::Preemptible(static_cast<uint32_t>(b * kernel.sm_count)));
      }
    }
  }
  if (kernel.sliceable) {
    const uint64_t wave = std::max<uint64_t>(kernel.WaveBlocks(), 1);
    // LaunchForm counts slices in 32 bits; grids with more waves than that get larger slices.
    uint64_t slices =
        std::min<uint64_t>((blocks + wave - 1) / wave, std::numeric_limits<uint32_t>::max());
    candidates.push_back(LaunchForm::Sliced(static_cast<uint32_t>(slices)));
    while (slices > 2) {
      slices = std::max<uint64_t>(slices / 2, 2);
      candidates.push_back(LaunchForm::Sliced(static_cast<uint32_t>(slices)));
    }
  }
  return candidates;
}

}  // namespace tally::profiler
