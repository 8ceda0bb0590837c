// Small helpers for passes that add code: fresh names that cannot collide with the module's,
// and terse constructors for the instructions and declarations passes insert.
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

// Hands out identifiers unused anywhere in a module (functions, variables, parameters,
// registers, labels), so inserted code never captures or shadows a name of the input.
class NameAllocator {
 public:
  explicit NameAllocator(const Module& module);
  // `base` itself when free, else `base_1`, `base_2`, ...; the name is then taken.
  std::string Fresh(std::string_view base);

 private:
  std::set<std::string, std::less<>> used_;
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
