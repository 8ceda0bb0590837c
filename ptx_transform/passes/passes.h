// The kernel transformations. Each takes an original kernel that the analysis allowed and
// returns a new kernel (the original stays in the module: every form shares its globals).
#pragma once

#include "ptx_transform/ir.h"
#include "ptx_transform/kernel_analysis.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/virtual_grid.h"

namespace tally::ptx::passes {

// Statements of `body` before which code may be inserted: after the leading declarations.
size_t FirstExecutableIndex(const std::vector<Statement>& body);

// slice_kernel.cc
// `module_names` is the module scope; names local to the variant come from a scope of its own.
Function MakeSlicedKernel(const Function& kernel, const std::string& name,
                          NameAllocator& module_names, GridFunctionCloner& cloner);

// flatten_blocks.cc: splices nested `{ }` blocks that contain barriers into `body`, renaming
// what they declare.
void FlattenBlocksWithBarriers(std::vector<Statement>& body, NameAllocator& names);

// unify_sync.cc: routes the kernel body's full-CTA barriers and exits through one block-wide
// synchronisation point; exits then continue at `task_end` once every thread has exited.
void UnifySynchronisation(std::vector<Statement>& body, int barrier_id, const std::string& task_end,
                          NameAllocator& names, std::vector<Statement>& declarations);

// make_preemptible.cc
Function MakePreemptibleKernel(const Function& kernel, const std::string& name,
                               const KernelAnalysis& analysis, NameAllocator& module_names,
                               GridFunctionCloner& cloner);

}  // namespace tally::ptx::passes
