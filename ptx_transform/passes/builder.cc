// Name allocation and instruction constructors for passes.
#include "ptx_transform/passes/builder.h"

#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {
namespace {

void CollectBodyNames(const std::vector<Statement>& statements,
                      std::set<std::string, std::less<>>& used) {
  for (const auto& s : statements) {
    if (const auto* label = std::get_if<Label>(&s.value)) used.insert(label->name);
    if (const auto* reg = std::get_if<RegDecl>(&s.value)) {
      for (const auto& entry : reg->entries) used.insert(entry.name);
    }
    if (const auto* var = std::get_if<Box<VarDecl>>(&s.value)) used.insert((*var)->name);
    if (const auto* block = std::get_if<Block>(&s.value)) CollectBodyNames(block->statements, used);
  }
}

}  // namespace

NameAllocator::NameAllocator(const Module& module) {
  for (const auto& item : module.items) {
    if (const auto* var = std::get_if<VarDecl>(&item.value)) used_.insert(var->name);
    const auto* f = std::get_if<Function>(&item.value);
    if (f == nullptr) continue;
    used_.insert(f->name);
    for (const auto& p : f->params) used_.insert(p.name);
    for (const auto& r : f->returns) used_.insert(r.name);
    if (f->body) CollectBodyNames(f->body->statements, used_);
  }
}

NameAllocator::NameAllocator(const NameAllocator& module_scope, const Function& function)
    : module_scope_(&module_scope) {
  for (const auto& p : function.params) used_.insert(p.name);
  for (const auto& r : function.returns) used_.insert(r.name);
  if (function.body) CollectBodyNames(function.body->statements, used_);
}

bool NameAllocator::Taken(const std::string& name) const {
  return used_.count(name) || (module_scope_ != nullptr && module_scope_->Taken(name));
}

std::string NameAllocator::Fresh(std::string_view base) {
  std::string name(base);
  if (Taken(name)) {
    int& suffix = next_suffix_[name];
    do {
      name = std::string(base) + "_" + std::to_string(++suffix);
    } while (Taken(name));
  }
  used_.insert(name);
  return name;
}

Instruction Inst(std::string opcode, std::initializer_list<std::string_view> modifiers,
                 std::vector<Operand> operands) {
  Instruction inst;
  inst.opcode = std::move(opcode);
  for (std::string_view m : modifiers) inst.modifiers.emplace_back(m);
  inst.operands = std::move(operands);
  return inst;
}

Instruction Guard(Instruction inst, std::string predicate, bool negated) {
  inst.guard = std::move(predicate);
  inst.guard_negated = negated;
  return inst;
}

Operand Reg(std::string name) { return Operand::Name(std::move(name)); }
Operand Imm(int64_t value) { return Operand::Imm(value); }
Operand Addr(std::string base, int64_t offset) { return Operand::Address(std::move(base), offset); }

Statement Stmt(Instruction inst) { return Statement{std::move(inst)}; }
Statement LabelAt(std::string name) { return Statement{Label{{}, std::move(name)}}; }

Statement DeclareRegisters(std::string type, std::vector<std::string> names) {
  RegDecl decl;
  decl.type = std::move(type);
  for (auto& n : names) decl.entries.push_back({std::move(n), std::nullopt});
  return Statement{std::move(decl)};
}

VarDecl Param(std::string type, std::string name) {
  VarDecl p;
  p.state_space = "param";
  p.type = std::move(type);
  p.name = std::move(name);
  return p;
}

}  // namespace tally::ptx::passes
