// Small helpers for passes that add code: fresh names that cannot collide with the module's,
// and terse constructors for the instructions and declarations passes insert.
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

// Hands out identifiers that collide with nothing the input declares, so inserted code never
// captures or shadows a name of the input. The module scope knows every name of the module
// (functions, variables, parameters, registers, labels); a function scope hands out names
// local to one function (registers, labels, parameters), checked against the module scope.
class NameAllocator {
 public:
  explicit NameAllocator(const Module& module);
  NameAllocator(const NameAllocator& module_scope, const Function& function);
  NameAllocator(const NameAllocator&) = delete;
  NameAllocator& operator=(const NameAllocator&) = delete;

  // `base` itself when free, else `base_1`, `base_2`, ...; the name is then taken.
  std::string Fresh(std::string_view base);

 private:
  bool Taken(const std::string& name) const;

  const NameAllocator* module_scope_ = nullptr;
  std::set<std::string, std::less<>> used_;
  // Where the search for `base_N` resumes: asking for the same base thousands of times (one
  // per kernel variant) stays linear.
  std::map<std::string, int, std::less<>> next_suffix_;
};

Instruction Inst(std::string opcode, std::initializer_list<std::string_view> modifiers,
                 std::vector<Operand> operands);
// The same instruction executed only where `predicate` (or its negation) holds.
Instruction Guard(Instruction inst, std::string predicate, bool negated = false);
Operand Reg(std::string name);
Operand Imm(int64_t value);
Operand Addr(std::string base, int64_t offset = 0);

Statement Stmt(Instruction inst);
Statement LabelAt(std::string name);
// `.reg .type a, b, c;`
Statement DeclareRegisters(std::string type, std::vector<std::string> names);
// `.param .type name` (a kernel parameter).
VarDecl Param(std::string type, std::string name);

}  // namespace tally::ptx::passes
