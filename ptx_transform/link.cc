// The IR linker: symbol table over all units, renaming of clashing file-local names, then one
// module laid out as prototypes of every function, every variable, every function body (PTX
// wants a name declared before it is used; initialisers may take function addresses).
#include "ptx_transform/link.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx {
namespace {

bool IsDefinition(const TopLevel& item) {
  if (const auto* f = std::get_if<Function>(&item.value)) return f->body.has_value();
  if (const auto* v = std::get_if<VarDecl>(&item.value)) return v->linkage != "extern";
  return false;
}

// `.extern .shared` arrays are dynamic shared memory, not references to another unit.
bool IsDynamicShared(const VarDecl& var) {
  return var.linkage == "extern" && var.state_space == "shared";
}

const std::string* SymbolName(const TopLevel& item) {
  if (const auto* f = std::get_if<Function>(&item.value)) return &f->name;
  if (const auto* v = std::get_if<VarDecl>(&item.value)) return &v->name;
  return nullptr;
}

const std::string& Linkage(const TopLevel& item) {
  if (const auto* f = std::get_if<Function>(&item.value)) return f->linkage;
  return std::get<VarDecl>(item.value).linkage;
}

void RenameInExpr(Expr& expr, const std::map<std::string, std::string>& renames) {
  if (expr.kind == Expr::Kind::kSymbol) {
    if (auto it = renames.find(expr.text); it != renames.end()) expr.text = it->second;
  }
  for (Expr& child : expr.children) RenameInExpr(child, renames);
}

void RenameInOperand(Operand& operand, const std::map<std::string, std::string>& renames) {
  if (operand.kind == Operand::Kind::kName) {
    if (auto it = renames.find(operand.name); it != renames.end()) operand.name = it->second;
  }
  if (operand.kind == Operand::Kind::kImmediate && operand.expr) {
    RenameInExpr(*operand.expr, renames);
  }
}

// Renames module-scope symbols of one unit everywhere in it.
void Rename(Module& unit, const std::map<std::string, std::string>& renames) {
  for (TopLevel& item : unit.items) {
    if (auto* var = std::get_if<VarDecl>(&item.value)) {
      if (auto it = renames.find(var->name); it != renames.end()) var->name = it->second;
      if (var->initializer) RenameInExpr(*var->initializer, renames);
    } else if (auto* f = std::get_if<Function>(&item.value)) {
      if (auto it = renames.find(f->name); it != renames.end()) f->name = it->second;
      if (!f->body) continue;
      passes::ForEachInstruction(f->body->statements, [&](Instruction& inst) {
        passes::ForEachOperand(inst, [&](Operand& op) { RenameInOperand(op, renames); });
      });
    }
  }
}

// Drops `.loc` statements (their file numbers would clash between units).
void DropLineInfo(std::vector<Statement>& statements) {
  std::erase_if(statements, [](const Statement& s) {
    const auto* d = std::get_if<Directive>(&s.value);
    return d != nullptr && d->name == "loc";
  });
  for (Statement& s : statements) {
    if (auto* block = std::get_if<Block>(&s.value)) DropLineInfo(block->statements);
  }
}

struct Definition {
  size_t unit = 0;
  const TopLevel* item = nullptr;
};

}  // namespace

absl::StatusOr<LinkedModule> LinkModules(std::vector<Module> units) {
  if (units.empty()) return absl::InvalidArgumentError("no PTX to link");
  for (size_t i = 1; i < units.size(); ++i) {
    if (units[i].targets != units[0].targets || units[i].address_size != units[0].address_size) {
      return absl::InvalidArgumentError(
          fmt::format("cannot link translation units for different targets: unit 0 is .target {} "
                      ".address_size {}, unit {} .target {} .address_size {}",
                      fmt::join(units[0].targets, ","), units[0].address_size, i,
                      fmt::join(units[i].targets, ","), units[i].address_size));
    }
  }
  // File-local definitions that share a name with a symbol of another unit get a unit suffix.
  std::map<std::string, std::set<size_t>> units_of_name;
  for (size_t i = 0; i < units.size(); ++i) {
    for (const TopLevel& item : units[i].items) {
      if (const std::string* name = SymbolName(item)) units_of_name[*name].insert(i);
    }
  }
  for (size_t i = 0; i < units.size(); ++i) {
    std::map<std::string, std::string> renames;
    for (const TopLevel& item : units[i].items) {
      const std::string* name = SymbolName(item);
      if (name != nullptr && Linkage(item).empty() && units_of_name[*name].size() > 1) {
        renames.emplace(*name, fmt::format("{}__tally_unit{}", *name, i));
      }
    }
    if (!renames.empty()) Rename(units[i], renames);
  }

  // The definition of every global symbol: `.visible` beats `.weak`/`.common`, the first weak
  // one wins among weak ones (PTX ISA, "Linking Directives").
  std::map<std::string, Definition> definitions;
  for (size_t i = 0; i < units.size(); ++i) {
    for (const TopLevel& item : units[i].items) {
      const std::string* name = SymbolName(item);
      if (name == nullptr || !IsDefinition(item)) continue;
      auto [it, inserted] = definitions.try_emplace(*name, Definition{i, &item});
      if (inserted) continue;
      const bool strong = Linkage(item) == "visible" || Linkage(item).empty();
      const bool existing_strong =
          Linkage(*it->second.item) == "visible" || Linkage(*it->second.item).empty();
      if (strong && existing_strong) {
        return absl::InvalidArgumentError(fmt::format(
            "'{}' is defined in translation units {} and {}", *name, it->second.unit, i));
      }
      if (strong) it->second = Definition{i, &item};
    }
  }

  LinkedModule linked;
  Module& out = linked.module;
  out.targets = units[0].targets;
  out.address_size = units[0].address_size;
  out.has_address_size = units[0].has_address_size;
  for (const Module& unit : units) {
    if (std::tie(unit.version_major, unit.version_minor) >
        std::tie(out.version_major, out.version_minor)) {
      out.version_major = unit.version_major;
      out.version_minor = unit.version_minor;
    }
  }
  std::vector<TopLevel> prototypes;
  std::vector<TopLevel> variables;
  std::vector<TopLevel> bodies;
  std::set<std::string> declared;
  for (size_t i = 0; i < units.size(); ++i) {
    for (const TopLevel& item : units[i].items) {
      if (const auto* var = std::get_if<VarDecl>(&item.value)) {
        if (IsDynamicShared(*var)) {
          if (declared.insert(var->name).second) variables.push_back(item);
        } else if (var->linkage == "extern") {
          if (!definitions.contains(var->name)) {
            return absl::NotFoundError(fmt::format(
                "unresolved external variable '{}' (declared in translation unit {}); no unit "
                "defines it",
                var->name, i));
          }
        } else if (definitions.at(var->name).item == &item) {
          variables.push_back(item);
        }
      } else if (const auto* f = std::get_if<Function>(&item.value)) {
        if (!f->body) {
          // Declarations are replaced by the prototypes of the definitions.
          if (!definitions.contains(f->name) && f->linkage == "extern" &&
              declared.insert(f->name).second) {
            prototypes.push_back(item);
            linked.unresolved_functions.push_back(f->name);
          }
          continue;
        }
        if (definitions.at(f->name).item != &item) continue;  // a weak duplicate
        if (!f->is_entry) {
          Function prototype = *f;
          prototype.body.reset();
          prototypes.push_back({std::move(prototype)});
        }
        TopLevel body = item;
        DropLineInfo(std::get<Function>(body.value).body->statements);
        bodies.push_back(std::move(body));
      }
      // Directives at module scope (`.file`, debug `.section`s) are line information.
    }
  }
  for (auto* part : {&prototypes, &variables, &bodies}) {
    std::move(part->begin(), part->end(), std::back_inserter(out.items));
  }
  return linked;
}

}  // namespace tally::ptx
