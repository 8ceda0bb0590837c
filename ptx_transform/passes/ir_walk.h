// Traversals of function bodies shared by the analysis and the passes: every statement in
// program order, descending into nested `{ }` blocks.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

// Calls f(instruction) for every instruction of `statements` and nested blocks, in order.
// Works on const and mutable statement lists alike.
template <typename Statements, typename F>
void ForEachInstruction(Statements& statements, F&& f) {
  for (auto& s : statements) {
    if (auto* inst = std::get_if<Instruction>(&s.value)) {
      f(*inst);
    } else if (auto* block = std::get_if<Block>(&s.value)) {
      ForEachInstruction(block->statements, f);
    }
  }
}

// Calls f(operand) for every operand of `inst`, descending into vectors, addresses, pairs and
// call lists.
template <typename Inst, typename F>
void ForEachOperand(Inst& inst, F&& f) {
  auto visit = [&](auto& self, auto& op) -> void {
    f(op);
    for (auto& element : op.elements) self(self, element);
  };
  for (auto& op : inst.operands) visit(visit, op);
}

// Position of the callee among a `call` instruction's operands: the first name operand
// outside the parenthesised return and argument lists (`call (r), f, (a);`, `call f;`,
// `call (r), %rd1, (a), proto;`); operands.size() when there is none.
inline size_t CallTargetIndex(const Instruction& call) {
  size_t i = 0;
  while (i < call.operands.size() && call.operands[i].kind != Operand::Kind::kName) ++i;
  return i;
}

inline const Operand* CallTarget(const Instruction& call) {
  size_t i = CallTargetIndex(call);
  return i < call.operands.size() ? &call.operands[i] : nullptr;
}

// Functions without a body in the module whose behaviour is known (CUDA's device runtime for
// printf, malloc/free and assert): calling them affects neither the grid, nor barriers, nor
// other blocks.
inline bool IsKnownExternalFunction(std::string_view name) {
  constexpr std::string_view kKnown[] = {"vprintf", "malloc", "free", "__assertfail"};
  return std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown);
}

// Functions of a module by name (the definition when there is one), built once: looking them
// up per call instruction with Module::FindFunction is quadratic on large modules. Holds
// positions, not pointers, so it stays valid while items are appended.
class FunctionIndex {
 public:
  explicit FunctionIndex(const Module& module) : module_(module) {
    for (size_t i = 0; i < module.items.size(); ++i) {
      const auto* f = std::get_if<Function>(&module.items[i].value);
      if (f == nullptr) continue;
      auto [it, inserted] = positions_.try_emplace(f->name, i);
      if (!inserted && f->body) it->second = i;
    }
  }
  const Function* Find(const std::string& name) const {
    auto it = positions_.find(name);
    return it == positions_.end() ? nullptr : &std::get<Function>(module_.items[it->second].value);
  }

 private:
  const Module& module_;
  std::map<std::string, size_t, std::less<>> positions_;
};

}  // namespace tally::ptx::passes
