// Virtual grid registers, their derivation from a linear block index, and the function clones
// that read them from shared memory.
#include "ptx_transform/passes/virtual_grid.h"

#include "ptx_transform/passes/ir_walk.h"

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

// Calls rewrite(operand, slot) for each grid read of each instruction in `statements`,
// giving the statement list and index so that code can be inserted before it.
template <typename F>
void ForEachGridRead(std::vector<Statement>& statements, F&& rewrite) {
  for (size_t i = 0; i < statements.size(); ++i) {
    if (auto* block = std::get_if<Block>(&statements[i].value)) {
      ForEachGridRead(block->statements, rewrite);
      continue;
    }
    auto* inst = std::get_if<Instruction>(&statements[i].value);
    if (inst == nullptr) continue;
    std::vector<std::pair<Operand*, int>> reads;
    ForEachOperand(*inst, [&](Operand& op) {
      int slot = GridSlot(op);
      if (slot >= 0) reads.emplace_back(&op, slot);
    });
    for (auto& [op, slot] : reads) i += rewrite(statements, i, *op, slot);
  }
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
  ForEachGridRead(statements, [&](std::vector<Statement>&, size_t, Operand& op, int slot) {
    op = Reg(slot < 3 ? grid.ctaid[slot] : grid.nctaid[slot - 3]);
    return 0;
  });
}

void AppendDecomposeLinear(std::vector<Statement>& out, const std::string& linear,
                           const VirtualGrid& grid, const std::string& scratch) {
  out.push_back(Stmt(Inst("rem", {"u32"}, {Reg(grid.ctaid[0]), Reg(linear), Reg(grid.nctaid[0])})));
  out.push_back(Stmt(Inst("div", {"u32"}, {Reg(scratch), Reg(linear), Reg(grid.nctaid[0])})));
  out.push_back(Stmt(Inst("rem", {"u32"}, {Reg(grid.ctaid[1]), Reg(scratch), Reg(grid.nctaid[1])})));
  out.push_back(Stmt(Inst("div", {"u32"}, {Reg(grid.ctaid[2]), Reg(scratch), Reg(grid.nctaid[1])})));
}

bool GridFunctionCloner::RedirectCalls(std::vector<Statement>& body) {
  bool calls = false;
  ForEachInstruction(body, [&](Instruction& inst) {
    if (inst.opcode != "call") return;
    for (auto& op : inst.operands) {
      if (op.kind != Operand::Kind::kName) continue;
      const Function* callee = functions_.Find(op.name);
      if (callee != nullptr && callee->body) {
        op.name = CloneOf(op.name);
        calls = true;
      }
      break;  // only the call target is a bare name
    }
  });
  return calls;
}

const std::string& GridFunctionCloner::CloneOf(const std::string& function) {
  if (auto it = clone_names_.find(function); it != clone_names_.end()) return it->second;
  if (shared_array_.empty()) shared_array_ = names_.Fresh("__tally_vgrid");
  const std::string& clone_name =
      clone_names_.emplace(function, names_.Fresh(function + "__tally_vgrid")).first->second;
  Function clone = *functions_.Find(function);
  clone.name = clone_name;
  clone.linkage.clear();  // a module-private helper of the kernel variants

  // Each grid read becomes a load from the shared array into a fresh register just before
  // the instruction that reads it.
  std::vector<std::string> temps;
  NameAllocator local_names(names_, clone);
  ForEachGridRead(clone.body->statements,
                  [&](std::vector<Statement>& list, size_t index, Operand& op, int slot) {
                    std::string temp = local_names.Fresh("%__tally_vg");
                    temps.push_back(temp);
                    op = Reg(temp);
                    list.insert(list.begin() + static_cast<std::ptrdiff_t>(index),
                                Stmt(Inst("ld", {"shared", "u32"},
                                          {Reg(temp), Addr(shared_array_, 4 * slot)})));
                    return 1;
                  });
  if (!temps.empty()) {
    auto& statements = clone.body->statements;
    statements.insert(statements.begin(), DeclareRegisters("b32", std::move(temps)));
  }
  // Calls inside the clone go to clones too (a recursive call finds the name made above).
  RedirectCalls(clone.body->statements);
  clones_.push_back(std::move(clone));
  return clone_name;
}

void GridFunctionCloner::AppendStoreGrid(std::vector<Statement>& out, const VirtualGrid& grid) {
  for (int slot = 0; slot < 6; ++slot) {
    const std::string& value = slot < 3 ? grid.ctaid[slot] : grid.nctaid[slot - 3];
    out.push_back(Stmt(Inst("st", {"shared", "u32"}, {Addr(shared_array_, 4 * slot), Reg(value)})));
  }
}

void GridFunctionCloner::Finish() {
  if (clones_.empty()) return;
  VarDecl array;
  array.state_space = "shared";
  array.align = 4;
  array.type = "u32";
  array.name = shared_array_;
  array.dims = {6};
  module_.items.push_back({std::move(array)});
  // Prototypes first: clones may call each other in any order (also recursively).
  for (const Function& clone : clones_) {
    Function prototype = clone;
    prototype.body.reset();
    module_.items.push_back({std::move(prototype)});
  }
  for (Function& clone : clones_) module_.items.push_back({std::move(clone)});
  clones_.clear();
}

}  // namespace tally::ptx::passes
