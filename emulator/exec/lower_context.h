// Name resolution while lowering one kernel: register scopes, labels, variables and the
// constant pool, per frame. The kernel body is the first frame, as is the body of each
// out-of-line `.func` lowered after it; every inlined `.func` call gets its own frame, so callee
// registers, labels and locals never clash with the caller's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "emulator/exec/call_graph.h"
#include "emulator/exec/lower.h"
#include "emulator/exec/program.h"
#include "ptx_transform/ir.h"

namespace tally::emu::exec {

// %tid, %ntid, %ctaid, ...: the special registers that are .v4 .u32 vectors (PTX ISA, "Special
// Registers"), read whole by `mov.v4.u32 {a, b, c, d}, %tid;`.
bool IsVectorSpecialRegister(std::string_view name);

// A function-scope variable: its space and its offset in that space. Call parameters (`.param`
// variables in a body, and an inlined callee's parameters bound to them) live in local memory.
struct LocalSymbol {
  Space space;
  uint64_t offset;
  uint64_t size = 0;
};

class LowerContext {
 public:
  LowerContext(Function& function, const ModuleSymbols& globals, const CallGraph& calls)
      : function_(function), globals_(globals), calls_(calls) {}

  // Slot holding `operand`'s value: a register, an immediate (converted to `type` when it is a
  // float literal) or a symbol's address. Special registers resolve to their per-lane slots.
  absl::StatusOr<uint32_t> Source(const ptx::Operand& operand, Type type);
  // Register slot written by a destination operand (`_` gets a scratch slot).
  absl::StatusOr<uint32_t> Dest(const ptx::Operand& operand);
  struct Address {
    uint32_t base;                      // slot of the base address
    int64_t offset;                     // added to it
    std::optional<Space> symbol_space;  // when the base is a function-scope variable
  };
  absl::StatusOr<Address> AddressOf(const ptx::Operand& operand);
  // The frame offset of the local variable `operand` names when it lives in an out-of-line
  // function's frame: its address is then the lane's frame base plus that offset, computed at
  // run time. nullopt for registers, other names, and the kernel's own variables.
  std::optional<uint64_t> FrameOffset(const ptx::Operand& operand) const;
  // The instruction being decoded (the next one appended) branches to `label`; resolved when
  // the frame ends, since labels may follow their uses.
  void BranchTo(const std::string& label);
  // `name: .branchtargets labels...;` declares a target list; brx.idx through it is resolved
  // with the frame's labels, like branches.
  void DeclareBranchTargets(const std::string& name, std::vector<std::string> labels) {
    frames_.back().target_lists[name] = std::move(labels);
  }
  void IndexedBranchTo(const std::string& list) {
    frames_.back().indexed_branches.emplace_back(next_index(), list);
  }
  // The instruction being decoded returns from the current inlined call.
  void ReturnFromCall() { frames_.back().returns.push_back(next_index()); }
  // Inside a .func (inlined or out of line) rather than the kernel's own code.
  bool in_call() const { return frames_.size() > 1 || frames_.front().out_of_line.has_value(); }
  // The out-of-line function (its index in CallGraph::out_of_line) that a `ret` here leaves;
  // nullopt in the kernel's code and inside inlined calls.
  std::optional<uint32_t> ReturnsFrom() const {
    return frames_.size() == 1 ? frames_.front().out_of_line : std::nullopt;
  }
  // The current (first) frame is the body of out-of-line function `index`.
  void SetOutOfLine(uint32_t index) { frames_.back().out_of_line = index; }
  uint32_t Constant(uint64_t value);

  // Frames and declarations.
  void PushFrame() { frames_.emplace_back(); }
  // Resolves the frame's branches; its returns go to the next instruction index.
  absl::Status PopFrame();
  bool InFrameOf(const std::string& function_name) const;
  void SetFrameFunction(const std::string& name) { frames_.back().function = name; }
  void PushScope() { frames_.back().scopes.emplace_back(); }
  void PopScope() { frames_.back().scopes.pop_back(); }
  absl::Status DeclareRegisters(const ptx::RegDecl& decl);
  void DeclareLabel(const std::string& name) { frames_.back().labels[name] = next_index(); }
  void DeclareVariable(const std::string& name, LocalSymbol symbol) {
    frames_.back().locals[name] = symbol;
  }
  // Module-scope variables laid out per kernel (.shared ones): visible in every frame, below
  // the frame's own names.
  void DeclareModuleVariable(const std::string& name, LocalSymbol symbol) {
    module_variables_[name] = symbol;
  }
  std::optional<LocalSymbol> FindVariable(const std::string& name) const;
  // Per-thread local memory for a variable of `bytes` bytes.
  uint64_t AllocateLocal(uint64_t bytes, uint64_t alignment);
  // Local bytes allocated so far for the code being lowered (the kernel with its inlined calls,
  // or one out-of-line function's frame), reset for the next.
  uint64_t TakeLocalBytes() { return std::exchange(local_bytes_, 0); }

  Function& function() { return function_; }
  // The value of a constant expression (an immediate operand).
  absl::StatusOr<uint64_t> Evaluate(const ptx::Expr& expr);
  // Whether `name` is a register declared .pred (operands whose meaning depends on it).
  bool IsPredicate(const std::string& name) const {
    auto slot = FindRegister(name);
    return slot && predicate_slots_.contains(*slot);
  }

 private:
  struct Frame {
    std::string function;
    std::vector<absl::flat_hash_map<std::string, uint32_t>> scopes;
    absl::flat_hash_map<std::string, uint32_t> labels;
    absl::flat_hash_map<std::string, LocalSymbol> locals;
    std::vector<std::pair<uint32_t, std::string>> branches;  // instruction, label
    absl::flat_hash_map<std::string, std::vector<std::string>> target_lists;
    std::vector<std::pair<uint32_t, std::string>> indexed_branches;  // instruction, list
    std::vector<uint32_t> returns;                                   // instructions
    std::optional<uint32_t> out_of_line;
  };
  uint32_t next_index() const { return static_cast<uint32_t>(function_.code.size()); }
  absl::StatusOr<uint64_t> SymbolValue(const std::string& name);
  std::optional<uint32_t> FindRegister(const std::string& name) const;
  uint32_t NewSlot();

  Function& function_;
  const ModuleSymbols& globals_;
  const CallGraph& calls_;
  std::vector<Frame> frames_;
  absl::flat_hash_map<uint64_t, uint32_t> constant_slots_;
  absl::flat_hash_set<uint32_t> predicate_slots_;
  absl::flat_hash_map<std::string, LocalSymbol> module_variables_;
  uint64_t local_bytes_ = 0;
};

// Decodes one PTX instruction into `out` (appends exactly one Inst on success).
absl::Status DecodeInstruction(const ptx::Instruction& instruction, LowerContext& context,
                               std::vector<Inst>& out);

// "line 12: unsupported instruction `foo.bar`: why" as CUDA_ERROR_NOT_SUPPORTED.
absl::Status Unsupported(const ptx::Instruction& instruction, std::string_view why);

}  // namespace tally::emu::exec
