// The grid as the original kernel saw it, after slicing or PTB changed the real one: virtual
// %ctaid/%nctaid registers in the kernel, and clones of the called functions that read them
// from shared memory (a .func cannot see the kernel's registers).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {

struct VirtualGrid {
  std::string ctaid[3];   // b32 registers holding the original %ctaid.x/y/z
  std::string nctaid[3];  // b32 registers holding the original %nctaid.x/y/z
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

// Clones the functions reachable from kernel variants into versions that read the virtual
// grid from a module-scope shared array. The clones and their prototypes are appended to the
// module on Finish(), before any kernel variant.
class GridFunctionCloner {
 public:
  GridFunctionCloner(Module& module, NameAllocator& names)
      : module_(module), functions_(module), names_(names) {}

  // Redirects the direct calls in `body` to clones (creating them on first use). Returns
  // whether `body` calls any function, i.e. needs the grid stored with StoreGrid.
  bool RedirectCalls(std::vector<Statement>& body);

  // Instructions storing the virtual grid into the shared array. Every thread of the block
  // stores the same values, so no barrier is needed before its own later reads.
  void AppendStoreGrid(std::vector<Statement>& out, const VirtualGrid& grid);

  // Appends the shared array, the prototypes and the clones to the module. Call once, before
  // appending kernel variants.
  void Finish();

 private:
  const std::string& CloneOf(const std::string& function);

  Module& module_;
  FunctionIndex functions_;
  NameAllocator& names_;
  std::string shared_array_;
  std::map<std::string, std::string> clone_names_;  // original -> clone
  std::vector<Function> clones_;
};

}  // namespace tally::ptx::passes
