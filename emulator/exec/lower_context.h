// Name resolution while lowering one function: register scopes, labels, variables and the
// constant pool. Shared by the function walk (lower.cc) and the instruction decoder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/exec/lower.h"
#include "emulator/exec/program.h"
#include "ptx_transform/ir.h"

namespace tally::emu::exec {

// A function-scope variable: its space and its offset in that space.
struct LocalSymbol {
  Space space;
  uint64_t offset;
};

class LowerContext {
 public:
  LowerContext(Function& function, const ModuleSymbols& globals)
      : function_(function), globals_(globals) {}

  // Slot holding `operand`'s value: a register, an immediate (converted to `type` when it is a
  // float literal) or a symbol's address. Special registers resolve to their per-lane slots.
  absl::StatusOr<uint32_t> Source(const ptx::Operand& operand, Type type);
  // Register slot written by a destination operand (`_` gets a scratch slot).
  absl::StatusOr<uint32_t> Dest(const ptx::Operand& operand);
  struct Address {
    uint32_t base;   // slot of the base address
    int64_t offset;  // added to it
  };
  absl::StatusOr<Address> AddressOf(const ptx::Operand& operand);
  absl::StatusOr<uint32_t> LabelTarget(const ptx::Operand& operand);
  uint32_t Constant(uint64_t value);

  // Declarations.
  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  absl::Status DeclareRegisters(const ptx::RegDecl& decl);
  void DeclareLabel(const std::string& name, uint32_t index) { labels_[name] = index; }
  void DeclareVariable(const std::string& name, LocalSymbol symbol) { locals_[name] = symbol; }

  Function& function() { return function_; }

 private:
  absl::StatusOr<uint64_t> Evaluate(const ptx::Expr& expr);
  absl::StatusOr<uint64_t> SymbolValue(const std::string& name);
  uint32_t NewSlot();

  Function& function_;
  const ModuleSymbols& globals_;
  std::vector<absl::flat_hash_map<std::string, uint32_t>> scopes_;
  absl::flat_hash_map<std::string, uint32_t> labels_;
  absl::flat_hash_map<std::string, LocalSymbol> locals_;
  absl::flat_hash_map<uint64_t, uint32_t> constant_slots_;
};

// Decodes one PTX instruction into `out` (appends exactly one Inst on success).
absl::Status DecodeInstruction(const ptx::Instruction& instruction, LowerContext& context,
                               std::vector<Inst>& out);

// "line 12: unsupported instruction `foo.bar`: why" as CUDA_ERROR_NOT_SUPPORTED.
absl::Status Unsupported(const ptx::Instruction& instruction, std::string_view why);

}  // namespace tally::emu::exec
