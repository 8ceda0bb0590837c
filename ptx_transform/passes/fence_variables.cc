// Addresses made from the module's own `.global` variables (see fence_variables.h).
#include "ptx_transform/passes/fence_variables.h"

#include <map>
#include <utility>

namespace tally::ptx::passes {
namespace {

using VariableBytes = std::function<uint64_t(const std::string&)>;
using AddressOperand = std::function<std::optional<size_t>(const Instruction&)>;

bool Is64BitInteger(const Instruction& inst) {
  return inst.HasModifier("u64") || inst.HasModifier("s64") || inst.HasModifier("b64");
}

// The instructions that copy an address, or add or subtract from it, into their first operand.
bool MovesAddress(const Instruction& inst) {
  if (!Is64BitInteger(inst) || inst.operands.empty() ||
      inst.operands[0].kind != Operand::Kind::kName) {
    return false;
  }
  if (inst.opcode == "cvta") return inst.HasModifier("global");  // cvta.global, cvta.to.global
  return inst.opcode == "mov" || inst.opcode == "add" || inst.opcode == "sub";
}

std::optional<int64_t> IntegerOf(const Operand& op) {
  if (op.kind != Operand::Kind::kImmediate || op.expr->kind != Expr::Kind::kInt) {
    return std::nullopt;
  }
  return op.expr->int_value;
}

// Registers computed from a variable's address by MovesAddress instructions, on any path.
std::set<std::string> Derived(const std::vector<Statement>& body,
                              const VariableBytes& variable_bytes) {
  std::set<std::string> derived;
  std::vector<std::string> work;
  std::map<std::string, std::vector<std::string>> users;  // source -> destinations
  auto mark = [&](const std::string& name) {
    if (derived.insert(name).second) work.push_back(name);
  };
  auto visit = [&](auto& self, const std::vector<Statement>& statements) -> void {
    for (const Statement& s : statements) {
      if (const auto* block = std::get_if<Block>(&s.value)) self(self, block->statements);
      const auto* inst = std::get_if<Instruction>(&s.value);
      if (inst == nullptr || !MovesAddress(*inst)) continue;
      for (size_t i = 1; i < inst->operands.size(); ++i) {
        const Operand& source = inst->operands[i];
        if (source.kind != Operand::Kind::kName) continue;
        if (variable_bytes(source.name) != 0) mark(inst->operands[0].name);
        users[source.name].push_back(inst->operands[0].name);
      }
    }
  };
  visit(visit, body);
  while (!work.empty()) {
    const std::string name = std::move(work.back());
    work.pop_back();
    for (const std::string& user : users[name]) mark(user);
  }
  return derived;
}

// What holds at one point of a statement list: register -> (variable, constant offset).
using Known = std::map<std::string, std::pair<std::string, int64_t>>;

// Forgets every name `op` mentions other than the base of an address (which an access only
// reads).
void ForgetNames(const Operand& op, Known& known) {
  if (op.kind == Operand::Kind::kName) known.erase(op.name);
  const size_t first = op.kind == Operand::Kind::kAddress ? 1 : 0;
  for (size_t i = first; i < op.elements.size(); ++i) ForgetNames(op.elements[i], known);
}

// What `inst` (a MovesAddress instruction, unguarded) leaves in its first operand.
std::optional<std::pair<std::string, int64_t>> Result(const Instruction& inst, const Known& known,
                                                      const VariableBytes& variable_bytes) {
  auto value = [&](const Operand& op) -> std::optional<std::pair<std::string, int64_t>> {
    if (op.kind != Operand::Kind::kName) return std::nullopt;
    if (auto it = known.find(op.name); it != known.end()) return it->second;
    if (inst.opcode == "mov" && variable_bytes(op.name) != 0) return std::pair{op.name, 0};
    return std::nullopt;
  };
  if (inst.opcode == "mov" || inst.opcode == "cvta") {
    return inst.operands.size() == 2 ? value(inst.operands[1]) : std::nullopt;
  }
  if (inst.operands.size() != 3) return std::nullopt;
  auto from = value(inst.operands[1]);
  std::optional<int64_t> constant = IntegerOf(inst.operands[2]);
  if (!from && inst.opcode == "add") {  // add %r, imm, %base
    from = value(inst.operands[2]);
    constant = IntegerOf(inst.operands[1]);
  }
  if (!from || !constant) return std::nullopt;
  int64_t offset = 0;
  const bool overflow = inst.opcode == "add"
                            ? __builtin_add_overflow(from->second, *constant, &offset)
                            : __builtin_sub_overflow(from->second, *constant, &offset);
  if (overflow) return std::nullopt;
  return std::pair{from->first, offset};
}

// Forgets the registers a declaration names (`%r` or every `%r<N>`).
void Forget(const RegDecl& decl, Known& known) {
  for (const auto& entry : decl.entries) {
    if (!entry.count) {
      known.erase(entry.name);
      continue;
    }
    for (auto it = known.lower_bound(entry.name);
         it != known.end() && it->first.starts_with(entry.name);) {
      it = known.erase(it);
    }
  }
}

class Prover {
 public:
  Prover(VariableAddresses& out, const VariableBytes& variable_bytes,
         const AddressOperand& address_operand)
      : out_(out), variable_bytes_(variable_bytes), address_operand_(address_operand) {}

  void Walk(const std::vector<Statement>& statements, Known known) {
    for (const Statement& s : statements) {
      if (const auto* inst = std::get_if<Instruction>(&s.value)) {
        Access(*inst, known);
        Update(*inst, known);
      } else if (const auto* decl = std::get_if<RegDecl>(&s.value)) {
        Forget(*decl, known);
      } else if (const auto* block = std::get_if<Block>(&s.value)) {
        Walk(block->statements, known);
        known.clear();  // names of the block's own may have been learned there
      } else if (!std::holds_alternative<Directive>(s.value) &&
                 !std::holds_alternative<Box<VarDecl>>(s.value)) {
        known.clear();  // a label: another path may arrive here
      }
    }
  }

 private:
  void Access(const Instruction& inst, const Known& known) {
    const std::optional<size_t> index = address_operand_(inst);
    if (!index) return;
    const Operand& operand = inst.operands[*index];
    const Operand& base = operand.kind == Operand::Kind::kAddress ? operand.elements[0] : operand;
    if (base.kind != Operand::Kind::kName) return;
    auto it = known.find(base.name);
    int64_t start = 0;
    if (it != known.end() && !__builtin_add_overflow(it->second.second, base.offset, &start) &&
        start >= 0 && static_cast<uint64_t>(start) < variable_bytes_(it->second.first)) {
      out_.proven.insert(&inst);
    } else if (out_.derived.contains(base.name)) {
      out_.derived_access = true;
    }
  }

  void Update(const Instruction& inst, Known& known) const {
    if (MovesAddress(inst)) {
      const std::string& destination = inst.operands[0].name;
      std::optional<std::pair<std::string, int64_t>> result;
      if (inst.guard.empty()) result = Result(inst, known, variable_bytes_);
      if (result) {
        known[destination] = *std::move(result);
      } else {
        known.erase(destination);
      }
      return;
    }
    if (inst.opcode == "st") return;  // writes memory only
    if (inst.opcode == "ld" && !inst.operands.empty()) {
      ForgetNames(inst.operands[0], known);
      return;
    }
    // Anything else may write any register it names.
    for (const Operand& op : inst.operands) ForgetNames(op, known);
  }

  VariableAddresses& out_;
  const VariableBytes& variable_bytes_;
  const AddressOperand& address_operand_;
};

}  // namespace

VariableAddresses FindVariableAddresses(const std::vector<Statement>& body,
                                        const VariableBytes& variable_bytes,
                                        const AddressOperand& address_operand) {
  VariableAddresses out;
  out.derived = Derived(body, variable_bytes);
  Prover(out, variable_bytes, address_operand).Walk(body, {});
  return out;
}

}  // namespace tally::ptx::passes
