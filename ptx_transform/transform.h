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
  // Fence every kernel that can be fenced, in place (passes/fence_memory.h), before making the
  // sliced and PTB forms from the fenced kernels.
  bool fence = false;
  // With `fence`, where RedirectDeviceOutput (device_output.h) follows: fenced code's printf and
  // assert pass the fence on, so that the strings Tally's output functions read are checked too
  // (passes/fence_memory.h, FenceTarget). The module is valid PTX only once that rewrite is done.
  bool fence_device_output = false;
};

// What a fenced kernel takes after its own parameters, as one `.param .align 8 .b8 [56]`. Every
// global memory access (and generic access to global memory) whose start address lies in none
// of the ranges [base[i], base[i] + size[i]) goes to base[0] instead and stores 1 to the u32 at
// violation_flag. Every base and size must be a multiple of 256 (the fence checks only the start
// of an access); size 0 marks an unused range. Range 0 must be the client's own memory (the
// sink), e.g. 0: its device partition, 1: its host-mapped memory, 2: the module's variables.
struct FenceParams {
  uint64_t base[3];
  uint64_t size[3];
  uint64_t violation_flag;
};
static_assert(sizeof(FenceParams) == 56);
static_assert(alignof(FenceParams) == 8);

// Parameters the variants take after the original ones (host code builds them with
// launch_forms.h); for a fenced kernel the "original ones" end with the fence parameter:
//   sliced:      .u32 first linear block, .u32 original grid x, y, z
//   preemptible: .u64 address of PtbState, .u32 original grid x, y, z
// The version of the transformations: bumped whenever the variants they produce change, so that
// measurements of older variants (the profiler's cache) are not reused.
inline constexpr uint32_t kTransformVersion = 1;
// The version of the fence (passes/fence_memory.h), bumped whenever fenced code changes (2: one
// check for a span of accesses through one base, fenced printf and assert; 3: range 0 checked
// first, the other ranges read and checked only past its branch; 4: accesses through a register
// holding a module variable's address plus a constant unchecked inside it, range 2 first for
// other addresses computed from a variable's).
inline constexpr uint32_t kFenceVersion = 4;
// The version of the forms made with or without the fence: fenced forms run other code, so their
// measurements are kept apart from the unfenced forms' (kFenceVersion above any kTransformVersion).
constexpr uint32_t FormsVersion(bool fenced) {
  return fenced ? kTransformVersion | (kFenceVersion << 16) : kTransformVersion;
}

struct PtbState {
  uint32_t next_task = 0;  // linear index of the next block to run; counts up past the grid
  uint32_t preempt = 0;    // set non-zero to stop the workers at their next task boundary
};

struct KernelForms {
  KernelAnalysis analysis;
  // With TransformOptions::fence: whether the kernel (under its own name) and its variants take
  // FenceParams after their own parameters; else why not.
  bool fenced = false;
  std::string fence_refusal;
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
