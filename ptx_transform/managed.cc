#include "ptx_transform/managed.h"

#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cuda_abi/managed_pointer.h"
#include "common/status.h"
#include "ptx_transform/passes/builder.h"

namespace tally::ptx {
namespace {

using Names = std::set<std::string, std::less<>>;

bool IsManaged(const VarDecl& var) {
  return var.state_space == "global" && var.linkage != "extern" &&
         std::ranges::find(var.attributes, "managed") != var.attributes.end();
}

// The first managed variable `expr` names, or null.
const std::string* NamedIn(const Expr& expr, const Names& managed) {
  if (expr.kind == Expr::Kind::kSymbol && managed.contains(expr.text)) return &expr.text;
  for (const Expr& child : expr.children) {
    if (const std::string* name = NamedIn(child, managed)) return name;
  }
  return nullptr;
}

// `.global .align 8 .u64 pointer = generic(variable);`: the device's own copy until the client
// points it elsewhere.
VarDecl PointerTo(const std::string& variable, const std::string& pointer) {
  VarDecl decl;
  decl.state_space = "global";
  decl.align = 8;
  decl.type = "u64";
  decl.name = pointer;
  Expr address;
  address.kind = Expr::Kind::kCall;
  address.text = "generic";
  address.children.push_back(Expr::Symbol(variable));
  decl.initializer = std::move(address);
  return decl;
}

absl::Status Refuse(SourceLocation location, const std::string& variable, std::string_view how) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "line %d: the managed variable %s is used %s, which Tally cannot redirect to memory the "
      "program shares with the device",
      location.line, variable, how));
}

// A variable (module or function scope) whose initialiser names a managed variable: its
// address would be the device's copy, not the memory the program shares.
absl::Status CheckInitializer(const VarDecl& var, const Names& managed) {
  if (!var.initializer) return absl::OkStatus();
  if (const std::string* name = NamedIn(*var.initializer, managed)) {
    return Refuse(var.location, *name, "in a variable's initialiser");
  }
  return absl::OkStatus();
}

// One function's instructions: each use of a managed variable reads its pointer into a register
// of the function (one per variable) just before the instruction, which then names the register.
class FunctionRewrite {
 public:
  FunctionRewrite(const Names& managed, const std::map<std::string, std::string>& pointers,
                  passes::NameAllocator& names)
      : managed_(managed), pointers_(pointers), names_(names) {}

  absl::Status Rewrite(std::vector<Statement>& statements) {
    std::vector<Statement> out;
    out.reserve(statements.size());
    for (Statement& statement : statements) {
      if (auto* block = std::get_if<Block>(&statement.value)) {
        TALLY_RETURN_IF_ERROR(Rewrite(block->statements));
      } else if (auto* var = std::get_if<Box<VarDecl>>(&statement.value)) {
        TALLY_RETURN_IF_ERROR(CheckInitializer(**var, managed_));
      } else if (auto* inst = std::get_if<Instruction>(&statement.value)) {
        TALLY_RETURN_IF_ERROR(RewriteInstruction(*inst, out));
      }
      out.push_back(std::move(statement));
    }
    statements = std::move(out);
    return absl::OkStatus();
  }

  // `.reg .b64` for the registers handed out, for the top of the function's body.
  std::optional<Statement> Declarations() const {
    if (registers_.empty()) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& [variable, reg] : registers_) names.push_back(reg);
    return passes::DeclareRegisters("b64", std::move(names));
  }

 private:
  absl::Status RewriteInstruction(Instruction& inst, std::vector<Statement>& out) {
    absl::Status status;
    std::set<std::string> loaded;
    // `in_address`: the base of `[base+offset]`; elsewhere an offset (`v+4`) is an expression.
    auto visit = [&](auto& self, Operand& op, bool in_address) -> void {
      for (Operand& element : op.elements) {
        self(self, element, op.kind == Operand::Kind::kAddress);
      }
      if (!status.ok()) return;
      if (op.kind == Operand::Kind::kImmediate && op.expr) {
        if (const std::string* name = NamedIn(*op.expr, managed_)) {
          status = Refuse(inst.location, *name, "in a constant expression");
        }
        return;
      }
      if (op.kind != Operand::Kind::kName || !managed_.contains(op.name)) return;
      if (op.offset != 0 && !in_address) {
        status = Refuse(inst.location, op.name, "in a constant expression");
        return;
      }
      const std::string& reg = RegisterFor(op.name);
      if (loaded.insert(op.name).second) {
        out.push_back(passes::Stmt(passes::Inst(
            "ld", {"global", "u64"}, {passes::Reg(reg), passes::Addr(pointers_.at(op.name))})));
      }
      op.name = reg;  // an address's offset stays: `[v+4]` becomes `[%reg+4]`
    };
    for (Operand& op : inst.operands) visit(visit, op, false);
    return status;
  }

  const std::string& RegisterFor(const std::string& variable) {
    auto [it, added] = registers_.try_emplace(variable);
    if (added) it->second = names_.Fresh("%__tally_managed");
    return it->second;
  }

  const Names& managed_;
  const std::map<std::string, std::string>& pointers_;
  passes::NameAllocator& names_;
  std::map<std::string, std::string> registers_;  // variable -> register
};

}  // namespace

absl::StatusOr<std::vector<std::string>> RedirectManagedVariables(Module& module) {
  Names managed;
  for (const TopLevel& item : module.items) {
    const auto* var = std::get_if<VarDecl>(&item.value);
    if (var != nullptr && IsManaged(*var)) managed.insert(var->name);
  }
  if (managed.empty()) return std::vector<std::string>{};
  if (module.address_size != 64) {
    return absl::InvalidArgumentError(
        "managed variables in a module with 32-bit addresses: Tally cannot redirect them");
  }
  Module rewritten = module;
  passes::NameAllocator module_names(rewritten);
  std::map<std::string, std::string> pointers;  // variable -> pointer variable
  for (const std::string& variable : managed) {
    const std::string wanted = ManagedPointerName(variable);
    if (module_names.Fresh(wanted) != wanted) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the module already names %s, which Tally needs for the managed variable %s", wanted,
          variable));
    }
    pointers[variable] = wanted;
  }
  std::vector<TopLevel> items;
  for (TopLevel& item : rewritten.items) {
    if (auto* var = std::get_if<VarDecl>(&item.value)) {
      TALLY_RETURN_IF_ERROR(CheckInitializer(*var, managed));
      const bool redirected = IsManaged(*var);
      const std::string variable = var->name;
      items.push_back(std::move(item));
      if (redirected) items.push_back(TopLevel{PointerTo(variable, pointers.at(variable))});
      continue;
    }
    if (auto* function = std::get_if<Function>(&item.value); function && function->body) {
      passes::NameAllocator names(module_names, *function);
      FunctionRewrite rewrite(managed, pointers, names);
      TALLY_RETURN_IF_ERROR(rewrite.Rewrite(function->body->statements));
      if (std::optional<Statement> declarations = rewrite.Declarations()) {
        auto& body = function->body->statements;
        body.insert(body.begin(), *std::move(declarations));
      }
    }
    items.push_back(std::move(item));
  }
  rewritten.items = std::move(items);
  module = std::move(rewritten);
  return std::vector<std::string>(managed.begin(), managed.end());
}

}  // namespace tally::ptx
