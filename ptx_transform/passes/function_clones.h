// Clones of a module's functions that a pass gives extra parameters (the virtual grid, the
// fence): one clone per original under a fresh name, appended to the module as prototypes and
// bodies once the pass is done.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"
#include "ptx_transform/passes/builder.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {

class FunctionClones {
 public:
  // Clones are named `<original><suffix>` (or a fresh variant of it).
  FunctionClones(Module& module, NameAllocator& names, std::string suffix)
      : module_(module), functions_(module), names_(names), suffix_(std::move(suffix)) {}

  // The functions of the module as it was when this was made (originals, not clones).
  const FunctionIndex& functions() const { return functions_; }

  // The name of the clone of `function`. The first time, `complete(clone)` is called with a
  // copy of the original under the clone's name and module-private (the pass adds its
  // parameters and rewrites the body); a recursive request made meanwhile finds the name.
  template <typename Complete>
  const std::string& CloneOf(const std::string& function, Complete&& complete) {
    if (auto it = names_of_.find(function); it != names_of_.end()) return it->second;
    const std::string& name =
        names_of_.emplace(function, names_.Fresh(function + suffix_)).first->second;
    Function clone = *functions_.Find(function);
    clone.name = name;
    clone.linkage.clear();  // a module-private helper of the transformed kernels
    clone.has_param_list = true;
    complete(clone);
    clones_.push_back(std::move(clone));
    return name;
  }

  // Appends the clones to the module: their prototypes (clones may call each other in any
  // order, also recursively) at the end, or with `prototypes_first` before the module's first
  // function (for kernels transformed in place, which call them where they stand); their
  // bodies at the end.
  void Finish(bool prototypes_first) {
    std::vector<TopLevel> prototypes;
    for (const Function& clone : clones_) {
      Function prototype = clone;
      prototype.body.reset();
      prototypes.push_back({std::move(prototype)});
    }
    auto at = prototypes_first ? std::find_if(module_.items.begin(), module_.items.end(),
                                              [](const TopLevel& item) {
                                                return std::holds_alternative<Function>(item.value);
                                              })
                               : module_.items.end();
    module_.items.insert(at, std::make_move_iterator(prototypes.begin()),
                         std::make_move_iterator(prototypes.end()));
    for (Function& clone : clones_) module_.items.push_back({std::move(clone)});
    clones_.clear();
  }

 private:
  Module& module_;
  FunctionIndex functions_;
  NameAllocator& names_;
  std::string suffix_;
  std::map<std::string, std::string> names_of_;  // original -> clone
  std::vector<Function> clones_;
};

// The parenthesised argument list after the callee of `call` (operand `target_index`), made
// empty when the call has none (`call f;`).
inline Operand& CallArgumentList(Instruction& call, size_t target_index) {
  auto args = call.operands.begin() + static_cast<std::ptrdiff_t>(target_index) + 1;
  if (args == call.operands.end() || args->kind != Operand::Kind::kParenList) {
    Operand list;
    list.kind = Operand::Kind::kParenList;
    args = call.operands.insert(args, std::move(list));
  }
  return *args;
}

}  // namespace tally::ptx::passes
