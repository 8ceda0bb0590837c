// Candidate forms and their estimates: PTB with b workers per SM for b = 1 .. the resident
// blocks per SM; sliced with one wave per slice and with 2 and 4 waves per slice; the choice
// is the fastest form whose turnaround is under the threshold, else the smallest turnaround, the
// fastest on ties. (Every PTB candidate's turnaround here is one task, equal by construction: the
// profiler reaches the same choice on measured turnarounds with its 1.25x slack.)
#include "benchmarks/sim/oracle_advisor.h"

#include <algorithm>

namespace tally::sim {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
Duration Scaled(Duration d, double factor) {
  return std::chrono::duration_cast<Duration>(d * factor);
}

}  // namespace

std::vector<FormEstimate> OracleAdvisor::Candidates(const TraceKernel& kernel) const {
  using scheduler::LaunchForm;
  const uint64_t blocks = kernel.grid.Count();
  const uint32_t per_sm = ResidentBlocksPerSm(device_, kernel.resources());
  const uint64_t wave = uint64_t{per_sm} * device_.sm_count;
  const uint64_t waves = CeilDiv(blocks, wave);
  std::vector<FormEstimate> out;
  const Duration original = kernel.block_time * static_cast<int64_t>(waves);
  out.push_back({LaunchForm::Original(), original, original});
  if (!kernel.transformable) return out;
  const Duration task = Scaled(kernel.block_time, kernel.ptb_slowdown);
  for (uint32_t b = 1; b <= per_sm; ++b) {
    const uint64_t workers = std::min<uint64_t>(uint64_t{b} * device_.sm_count, blocks);
    out.push_back({LaunchForm::Preemptible(static_cast<uint32_t>(workers)),
                   task * static_cast<int64_t>(CeilDiv(blocks, workers)), task});
    if (workers == blocks) break;
  }
  const Duration slice_block = Scaled(kernel.block_time, kernel.sliced_slowdown);
  for (uint64_t waves_per_slice : {1, 2, 4}) {
    const uint64_t slices = CeilDiv(waves, waves_per_slice);
    if (slices < 2) break;
    const Duration one = slice_block * static_cast<int64_t>(waves_per_slice);
    out.push_back({LaunchForm::Sliced(static_cast<uint32_t>(slices)),
                   (device_.launch_latency + one) * static_cast<int64_t>(slices), one});
  }
  return out;
}

scheduler::FormChoice OracleAdvisor::Choose(const scheduler::KernelInfo& info) {
  auto it = kernels_.find(info.shape.kernel);
  if (it == kernels_.end()) return {scheduler::LaunchForm::Preemptible(), true};
  const std::vector<FormEstimate> candidates = Candidates(it->second);
  const FormEstimate& original = candidates.front();
  if (original.time <= threshold_) return {original.form, /*short_turnaround=*/true, original.time};
  if (candidates.size() == 1) return {original.form, /*short_turnaround=*/false, original.time};
  const FormEstimate* best = nullptr;
  for (size_t i = 1; i < candidates.size(); ++i) {
    const FormEstimate& c = candidates[i];
    if (c.turnaround <= threshold_ && (!best || c.time < best->time)) best = &c;
  }
  if (!best) {
    best = &*std::min_element(
        candidates.begin() + 1, candidates.end(), [](const auto& a, const auto& b) {
          return a.turnaround != b.turnaround ? a.turnaround < b.turnaround : a.time < b.time;
        });
  }
  return {best->form, /*short_turnaround=*/true, original.time};
}

}  // namespace tally::sim
