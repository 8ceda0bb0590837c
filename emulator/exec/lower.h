// Lowering of a parsed PTX module into the interpreter's Program form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/exec/call_graph.h"
#include "emulator/exec/program.h"
#include "ptx_transform/ir.h"

namespace tally::emu::exec {

// A module-scope variable already placed by the loader: .global/.const variables live in
// device memory (`address` is a device address), .shared ones get block offsets here.
struct ModuleSymbol {
  Space space = Space::kGlobal;
  uint64_t address = 0;
  uint64_t size = 0;
};
using ModuleSymbols = absl::flat_hash_map<std::string, ModuleSymbol>;

// Size in bytes of a sized variable (0 for `[]` arrays) and its alignment.
uint64_t VariableBytes(const ptx::VarDecl& var);
uint64_t VariableAlignment(const ptx::VarDecl& var);

// Every `.entry` with a body, lowered. Fails with CUDA_ERROR_NOT_SUPPORTED naming the first
// instruction (and line) the interpreter does not implement, and with CUDA_ERROR_INVALID_PTX
// for names that do not resolve.
// `calls` (AnalyzeCalls of the same module) says which .funcs are called for real.
absl::StatusOr<std::vector<Function>> LowerModule(const ptx::Module& module,
                                                  const ModuleSymbols& globals,
                                                  const CallGraph& calls);

}  // namespace tally::emu::exec
