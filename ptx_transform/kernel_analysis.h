// Per-kernel facts that decide whether, and how, a kernel may be sliced or made preemptible:
// which special registers it reads (also in the functions it calls), its barriers and exits,
// and every reason a transformation would be unsafe.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx {

struct BarrierUse {
  SourceLocation location;
  std::string form;        // `bar.sync`, `barrier.red`, `bar.arrive`, ...
  int64_t id = -1;         // -1 when the barrier id is a register
  bool has_count = false;  // partial-CTA barrier (`bar.sync 1, 64`)
};

struct KernelAnalysis {
  std::string kernel;
  std::set<std::string> special_registers;          // `%ctaid.x`, `%tid.y`, ... also via calls
  bool reads_grid = false;                          // %ctaid / %nctaid anywhere (kernel or callees)
  std::vector<std::string> grid_reading_functions;  // callees that read %ctaid/%nctaid
  std::vector<BarrierUse> barriers;                 // in the kernel body
  uint32_t exits = 0;                               // `ret` / `exit` in the kernel body
  bool uses_dynamic_shared = false;                 // references an `.extern .shared` array
  std::set<int64_t> barrier_ids;                    // ids used by any barrier (kernel and callees)

  // Empty when the form is safe; otherwise why the kernel must run in its original form.
  std::vector<std::string> slice_blockers;
  std::vector<std::string> ptb_blockers;

  bool sliceable() const { return slice_blockers.empty(); }
  bool preemptible() const { return ptb_blockers.empty(); }
};

// Analyses `kernel` (an `.entry` of `module`).
KernelAnalysis AnalyzeKernel(const Module& module, const Function& kernel);

// Analyses many kernels of one module, scanning each called function once. The module must
// not change while it is in use.
class KernelAnalyzer {
 public:
  explicit KernelAnalyzer(const Module& module);
  ~KernelAnalyzer();
  KernelAnalysis Analyze(const Function& kernel);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// True for the PTX special registers (`%tid`, `%ctaid`, `%envreg3`, ...; PTX ISA "Special
// Registers"), which no declaration introduces.
bool IsSpecialRegister(std::string_view name);

}  // namespace tally::ptx
