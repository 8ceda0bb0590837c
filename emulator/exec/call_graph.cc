// Call graph of a PTX module: direct calls, indirect call sites and the functions whose address
// is taken (operands naming a function, function symbols in .global/.const initializers).
#include "emulator/exec/call_graph.h"

#include <algorithm>

namespace tally::emu::exec {
namespace {

void CollectSymbols(const ptx::Expr& expr, std::vector<std::string>& out) {
  if (expr.kind == ptx::Expr::Kind::kSymbol) out.push_back(expr.text);
  for (const ptx::Expr& child : expr.children) CollectSymbols(child, out);
}

// Names an instruction mentions outside call targets: candidates for taken addresses.
void CollectOperandNames(const ptx::Operand& operand, std::vector<std::string>& out) {
  using Kind = ptx::Operand::Kind;
  if (operand.kind == Kind::kName) out.push_back(operand.name);
  if (operand.kind == Kind::kImmediate && operand.expr) CollectSymbols(*operand.expr, out);
  if (operand.kind == Kind::kVector || operand.kind == Kind::kPair) {
    for (const ptx::Operand& element : operand.elements) CollectOperandNames(element, out);
  }
}

// Every function of the module by name: whether some declaration has a body (entries count as
// bodiless: they cannot be called).
using FunctionNames = absl::flat_hash_map<std::string, bool>;

void Walk(const std::vector<ptx::Statement>& statements, const FunctionNames& functions,
          CallGraph::Node& node, std::vector<std::string>& names) {
  for (const ptx::Statement& statement : statements) {
    if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      Walk(block->statements, functions, node, names);
      continue;
    }
    const auto* instruction = std::get_if<ptx::Instruction>(&statement.value);
    if (instruction == nullptr) continue;
    if (instruction->opcode != "call") {
      for (const ptx::Operand& operand : instruction->operands) {
        CollectOperandNames(operand, names);
      }
      continue;
    }
    std::optional<CallOperands> call = ParseCallOperands(*instruction);
    if (!call) continue;  // lowering reports it
    auto callee = functions.find(call->target->name);
    if (callee == functions.end()) {
      node.calls_indirectly = true;
    } else if (callee->second) {
      node.callees.push_back(callee->first);
    }
  }
}

}  // namespace

std::optional<CallOperands> ParseCallOperands(const ptx::Instruction& call) {
  using Kind = ptx::Operand::Kind;
  const auto& operands = call.operands;
  CallOperands result;
  size_t i = 0;
  if (i < operands.size() && operands[i].kind == Kind::kParenList) result.returns = &operands[i++];
  if (i >= operands.size() || operands[i].kind != Kind::kName) return std::nullopt;
  result.target = &operands[i++];
  if (i < operands.size() && operands[i].kind == Kind::kParenList) {
    result.arguments = &operands[i++];
  }
  if (i < operands.size() && operands[i].kind == Kind::kName) result.prototype = &operands[i++];
  if (i != operands.size()) return std::nullopt;
  return result;
}

CallGraph AnalyzeCalls(const ptx::Module& module) {
  CallGraph graph;
  FunctionNames functions;
  for (const ptx::TopLevel& item : module.items) {
    if (const auto* function = std::get_if<ptx::Function>(&item.value)) {
      functions[function->name] |= function->body.has_value() && !function->is_entry;
    }
  }
  absl::flat_hash_set<std::string> taken;
  auto note_taken = [&](const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      if (auto it = functions.find(name); it != functions.end() && it->second) taken.insert(name);
    }
  };
  for (const ptx::TopLevel& item : module.items) {
    if (const auto* var = std::get_if<ptx::VarDecl>(&item.value)) {
      std::vector<std::string> names;
      if (var->initializer) CollectSymbols(*var->initializer, names);
      note_taken(names);
      continue;
    }
    const auto* function = std::get_if<ptx::Function>(&item.value);
    if (function == nullptr || !function->body) continue;
    std::vector<std::string> names;
    Walk(function->body->statements, functions, graph.nodes[function->name], names);
    note_taken(names);
  }

  // A function is recursive when it can reach itself (indirect calls reach every taken address).
  graph.address_taken.assign(taken.begin(), taken.end());
  std::sort(graph.address_taken.begin(), graph.address_taken.end());
  for (const ptx::TopLevel& item : module.items) {
    const auto* function = std::get_if<ptx::Function>(&item.value);
    if (function == nullptr || !function->body || function->is_entry) continue;
    if (graph.index.contains(function->name)) continue;  // defined twice: lowering refuses it
    bool recursive = graph.ReachableNames(function->name).contains(function->name);
    if (!recursive && !taken.contains(function->name)) continue;
    graph.index[function->name] = static_cast<uint32_t>(graph.out_of_line.size());
    graph.out_of_line.push_back(function);
    graph.recursive.push_back(recursive);
  }
  return graph;
}

absl::flat_hash_set<std::string> CallGraph::ReachableNames(const std::string& from) const {
  absl::flat_hash_set<std::string> visited;
  std::vector<std::string> work = {from};
  bool first = true;
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    if (!first && !visited.insert(name).second) continue;
    first = false;
    auto node = nodes.find(name);
    if (node == nodes.end()) continue;
    for (const std::string& callee : node->second.callees) work.push_back(callee);
    if (node->second.calls_indirectly) {
      for (const std::string& callee : address_taken) work.push_back(callee);
    }
  }
  return visited;
}

std::vector<uint32_t> CallGraph::Reachable(const ptx::Function& function) const {
  std::vector<uint32_t> reached;
  for (const std::string& name : ReachableNames(function.name)) {
    if (auto it = index.find(name); it != index.end()) reached.push_back(it->second);
  }
  std::sort(reached.begin(), reached.end());  // deterministic code layout
  return reached;
}

}  // namespace tally::emu::exec
