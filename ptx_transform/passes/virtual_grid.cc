// Virtual grid registers, their derivation from a linear block index, and the function clones
// that receive them as parameters.
#include "ptx_transform/passes/virtual_grid.h"

#include "ptx_transform/passes/ir_walk.h"
#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {
namespace {

constexpr char kComponents[3] = {'x', 'y', 'z'};

// Index of `component` for %ctaid (0-2) and %nctaid (3-5), or -1 for other operands.
int GridSlot(const Operand& op) {
  if (op.kind != Operand::Kind::kName || op.negated) return -1;
  int base = op.name == "%ctaid" ? 0 : op.name == "%nctaid" ? 3 : -1;
  if (base < 0) return -1;
  for (int c = 0; c < 3; ++c) {
    if (op.component == kComponents[c]) return base + c;
  }
  return -1;
}

}  // namespace

VirtualGrid MakeVirtualGrid(NameAllocator& names, std::vector<Statement>& declarations) {
  VirtualGrid grid;
  std::vector<std::string> all;
  for (int c = 0; c < 3; ++c) {
    grid.ctaid[c] = names.Fresh(std::string("%__tally_ctaid_") + kComponents[c]);
    grid.nctaid[c] = names.Fresh(std::string("%__tally_nctaid_") + kComponents[c]);
    all.push_back(grid.ctaid[c]);
    all.push_back(grid.nctaid[c]);
  }
  declarations.push_back(DeclareRegisters("b32", std::move(all)));
  return grid;
}

void ReplaceGridReads(std::vector<Statement>& statements, const VirtualGrid& grid) {
  ForEachInstruction(statements, [&](Instruction& inst) {
    ForEachOperand(inst, [&](Operand& op) {
      if (int slot = GridSlot(op); slot >= 0) op = Reg(grid.Register(slot));
    });
  });
}

void AppendDecomposeLinear(std::vector<Statement>& out, const std::string& linear,
                           const VirtualGrid& grid, const std::string& scratch) {
  out.push_back(Stmt(Inst("rem", {"u32"}, {Reg(grid.ctaid[0]), Reg(linear), Reg(grid.nctaid[0])})));
  out.push_back(Stmt(Inst("div", {"u32"}, {Reg(scratch), Reg(linear), Reg(grid.nctaid[0])})));
  out.push_back(
      Stmt(Inst("rem", {"u32"}, {Reg(grid.ctaid[1]), Reg(scratch), Reg(grid.nctaid[1])})));
  out.push_back(
      Stmt(Inst("div", {"u32"}, {Reg(grid.ctaid[2]), Reg(scratch), Reg(grid.nctaid[1])})));
}

void GridFunctionCloner::RedirectCalls(std::vector<Statement>& body, const VirtualGrid& grid,
                                       NameAllocator& local_names) {
  for (auto& statement : body) {
    if (auto* block = std::get_if<Block>(&statement.value)) {
      RedirectCalls(block->statements, grid, local_names);
      continue;
    }
    auto* call = std::get_if<Instruction>(&statement.value);
    if (call == nullptr || call->opcode != "call") continue;
    size_t target_index = CallTargetIndex(*call);
    if (target_index == call->operands.size()) continue;
    auto target = call->operands.begin() + static_cast<std::ptrdiff_t>(target_index);
    const Function* callee = clones_.functions().Find(target->name);
    if (callee == nullptr || !callee->body) continue;  // external: the analysis vetted it
    target->name = CloneOf(target->name);

    // `{ .param .b32 a0..a5; st.param.b32 [a0], %ctaid_x; ...; call f, (args..., a0..a5); }`
    // The new block nests inside the call sequence's own, whose parameters stay visible.
    Block sequence;
    Operand& args = CallArgumentList(*call, target_index);
    for (int slot = 0; slot < 6; ++slot) {
      std::string param = local_names.Fresh("__tally_grid_arg");
      sequence.statements.push_back({Box<VarDecl>(Param("b32", param))});
      sequence.statements.push_back(
          Stmt(Inst("st", {"param", "b32"}, {Addr(param), Reg(grid.Register(slot))})));
      args.elements.push_back(Reg(param));
    }
    sequence.statements.push_back(Stmt(std::move(*call)));
    statement.value = std::move(sequence);
  }
}

const std::string& GridFunctionCloner::CloneOf(const std::string& function) {
  return clones_.CloneOf(function, [&](Function& clone) {
    NameAllocator local_names(names_, clone);
    std::vector<Statement> prologue;
    VirtualGrid grid = MakeVirtualGrid(local_names, prologue);
    for (int slot = 0; slot < 6; ++slot) {
      std::string param = local_names.Fresh(
          std::string(slot < 3 ? "__tally_ctaid_" : "__tally_nctaid_") + kComponents[slot % 3]);
      clone.params.push_back(Param("b32", param));
      prologue.push_back(
          Stmt(Inst("ld", {"param", "b32"}, {Reg(grid.Register(slot)), Addr(param)})));
    }
    auto& body = clone.body->statements;
    ReplaceGridReads(body, grid);
    // Calls inside the clone go to clones too (a recursive call finds the name made above).
    RedirectCalls(body, grid, local_names);
    body.insert(body.begin() + static_cast<std::ptrdiff_t>(FirstExecutableIndex(body)),
                std::make_move_iterator(prologue.begin()), std::make_move_iterator(prologue.end()));
  });
}

void GridFunctionCloner::Finish() { clones_.Finish(/*prototypes_first=*/false); }

}  // namespace tally::ptx::passes
