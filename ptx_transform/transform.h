// The transformation driver: adds a sliced and a preemptible (PTB) variant of every kernel the
// analysis allows, next to the original kernels in the same module (so that every form shares
// the module's global variables), and reports per kernel what was made or why not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"
#include "ptx_transform/kernel_analysis.h"

namespace tally::ptx {

struct TransformOptions {
  bool slice = true;
  bool preemptible = true;
};

// Parameters the variants take after the original ones (host code builds them with
// launch_forms.h):
//   sliced:      .u32 first linear block, .u32 original grid x, y, z
//   preemptible: .u64 address of PtbState, .u32 original grid x, y, z
// The version of the transformations: bumped whenever the variants they produce change, so that
// measurements of older variants (the profiler's cache) are not reused.
inline constexpr uint32_t kTransformVersion = 1;

struct PtbState {
  uint32_t next_task = 0;  // linear index of the next block to run; counts up past the grid
  uint32_t preempt = 0;    // set non-zero to stop the workers at their next task boundary
};

struct KernelForms {
  KernelAnalysis analysis;
  std::string sliced;       // name of the sliced variant; empty when not made
  std::string preemptible;  // name of the PTB variant; empty when not made
};

struct TransformReport {
  std::vector<KernelForms> kernels;
  // One line per kernel and requested form: made (and its name) or why not.
  std::string Format(const TransformOptions& options) const;
};

TransformReport TransformModule(Module& module, const TransformOptions& options);

}  // namespace tally::ptx
