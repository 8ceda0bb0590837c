// Which `.func`s of a module need real calls: the recursive ones (inlining would not end) and
// those whose address is taken (an indirect call or a function-pointer table needs one copy of
// the code to point at). Every other .func is inlined at its call sites.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "ptx_transform/ir.h"

namespace tally::emu::exec {

struct CallGraph {
  // The out-of-line functions in module order; the index is the one FunctionAddress encodes.
  std::vector<const ptx::Function*> out_of_line;
  std::vector<bool> recursive;  // by index: may be active twice on one lane's stack
  absl::flat_hash_map<std::string, uint32_t> index;  // name -> index in out_of_line

  // Out-of-line functions that code of `function` (an entry or a .func) can call, directly, through
  // inlined callees or indirectly (an indirect call can reach every address-taken function).
  std::vector<uint32_t> Reachable(const ptx::Function& function) const;
  // Names of the functions with a body reachable from `from` by one call or more.
  absl::flat_hash_set<std::string> ReachableNames(const std::string& from) const;

  struct Node {
    std::vector<std::string> callees;  // direct calls to functions with a body
    bool calls_indirectly = false;
  };
  absl::flat_hash_map<std::string, Node> nodes;  // every function with a body
  std::vector<std::string> address_taken;  // sorted
};

CallGraph AnalyzeCalls(const ptx::Module& module);

// `call` operands (PTX ISA, "call"): `call{.uni} [(ret),] target[, (args)][, prototype];`.
// `target` is a function name or, for an indirect call, a register.
struct CallOperands {
  const ptx::Operand* returns = nullptr;
  const ptx::Operand* target = nullptr;
  const ptx::Operand* arguments = nullptr;
  const ptx::Operand* prototype = nullptr;  // .callprototype or .calltargets label
};
// nullopt when the operands are not of that form.
std::optional<CallOperands> ParseCallOperands(const ptx::Instruction& call);

}  // namespace tally::emu::exec
