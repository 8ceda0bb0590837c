// The grid as the original kernel saw it, after slicing or PTB changed the real one: virtual
// %ctaid/%nctaid registers in the kernel, and clones of the called functions that receive
// them as parameters (a .func cannot see the kernel's registers).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/function_clones.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {

struct VirtualGrid {
  std::string ctaid[3];   // b32 registers holding the original %ctaid.x/y/z
  std::string nctaid[3];  // b32 registers holding the original %nctaid.x/y/z

  // Slots 0-2 are %ctaid.x/y/z, 3-5 %nctaid.x/y/z (the order of the clones' parameters).
  const std::string& Register(int slot) const { return slot < 3 ? ctaid[slot] : nctaid[slot - 3]; }
};

// A VirtualGrid of fresh register names, with their declaration.
VirtualGrid MakeVirtualGrid(NameAllocator& names, std::vector<Statement>& declarations);

// Replaces every read of %ctaid.{x,y,z} and %nctaid.{x,y,z} in `statements` (nested blocks
// included) by the virtual registers.
void ReplaceGridReads(std::vector<Statement>& statements, const VirtualGrid& grid);

// Appends to `out` the instructions that derive the original 3-D block index from a linear
// one (x fastest, as blocks are numbered in CUDA): x = i % nx, y = (i / nx) % ny,
// z = i / (nx * ny). `scratch` is a b32 register that is overwritten.
void AppendDecomposeLinear(std::vector<Statement>& out, const std::string& linear,
                           const VirtualGrid& grid, const std::string& scratch);

// Clones the functions reachable from kernel variants into versions that take the virtual
// grid as six more `.b32` parameters (%ctaid.x/y/z, %nctaid.x/y/z), and redirects calls to
// them. The clones and their prototypes are appended to the module on Finish(), before any
// kernel variant; the originals stay for the original kernels.
class GridFunctionCloner {
 public:
  GridFunctionCloner(Module& module, NameAllocator& names)
      : clones_(module, names, "__tally_vgrid"), names_(names) {}

  // Redirects the direct calls in `body` (a function whose virtual grid is in `grid`, whose
  // local names come from `local_names`) to clones, passing the grid along.
  void RedirectCalls(std::vector<Statement>& body, const VirtualGrid& grid,
                     NameAllocator& local_names);

  // Appends the prototypes and the clones to the module. Call once, before appending kernel
  // variants.
  void Finish();

 private:
  const std::string& CloneOf(const std::string& function);

  FunctionClones clones_;
  NameAllocator& names_;
};

}  // namespace tally::ptx::passes
