// Lowering driver: lays out each function's variables, resolves names and labels, and decodes
// its instructions (lower_inst.cc) into the Program form.
#include "emulator/exec/lower.h"

#include <bit>
#include <cstring>

#include "common/status.h"
#include "emulator/exec/lower_context.h"
#include "emulator/internal/cuda_status.h"
#include "ptx_transform/kernel_signature.h"

namespace tally::emu::exec {
namespace {

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

uint64_t VariableBytes(const ptx::VarDecl& var) {
  uint64_t bytes = ptx::ScalarTypeSize(var.type) * std::max<uint32_t>(var.vector_width, 1);
  for (const auto& dim : var.dims) bytes *= dim.value_or(0);
  return bytes;
}

uint64_t VariableAlignment(const ptx::VarDecl& var) {
  uint64_t natural = ptx::ScalarTypeSize(var.type) * std::max<uint32_t>(var.vector_width, 1);
  return std::max<uint64_t>(var.align.value_or(natural), 1);
}

namespace {

// Space layout of a function's shared and local variables; dynamic shared memory (extern
// `[]` arrays) starts after all static shared data, 16-byte aligned.
struct Layout {
  uint64_t shared = 0;
  uint64_t local = 0;
  std::vector<std::pair<std::string, Space>> dynamic_shared;
};

void PlaceVariable(const ptx::VarDecl& var, Layout& layout, LowerContext& context) {
  if (var.state_space == "shared") {
    if (!var.dims.empty() && !var.dims.back().has_value()) {
      layout.dynamic_shared.emplace_back(var.name, Space::kShared);
      return;
    }
    layout.shared = AlignUp(layout.shared, VariableAlignment(var));
    context.DeclareVariable(var.name, {Space::kShared, layout.shared});
    layout.shared += VariableBytes(var);
  } else if (var.state_space == "local") {
    layout.local = AlignUp(layout.local, VariableAlignment(var));
    context.DeclareVariable(var.name, {Space::kLocal, layout.local});
    layout.local += VariableBytes(var);
  }
}

// First pass: labels get the index of the next instruction, variables their offsets.
void CollectDeclarations(const std::vector<ptx::Statement>& statements, uint32_t& index,
                         Layout& layout, LowerContext& context) {
  for (const ptx::Statement& statement : statements) {
    if (const auto* label = std::get_if<ptx::Label>(&statement.value)) {
      context.DeclareLabel(label->name, index);
    } else if (std::holds_alternative<ptx::Instruction>(statement.value)) {
      ++index;
    } else if (const auto* var = std::get_if<Box<ptx::VarDecl>>(&statement.value)) {
      PlaceVariable(**var, layout, context);
    } else if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      CollectDeclarations(block->statements, index, layout, context);
    }
  }
}

// Second pass: registers by scope, then every instruction.
absl::Status LowerStatements(const std::vector<ptx::Statement>& statements,
                             LowerContext& context) {
  context.PushScope();
  for (const ptx::Statement& statement : statements) {
    if (const auto* regs = std::get_if<ptx::RegDecl>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(context.DeclareRegisters(*regs));
    } else if (const auto* instruction = std::get_if<ptx::Instruction>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(DecodeInstruction(*instruction, context, context.function().code));
    } else if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(LowerStatements(block->statements, context));
    }
  }
  context.PopScope();
  return absl::OkStatus();
}

// .maxntid / .reqntid limit the block size (PTX ISA, "Performance-Tuning Directives").
uint32_t MaxThreads(const ptx::Function& function) {
  for (const ptx::Directive& directive : function.performance_directives) {
    if (directive.name != "maxntid" && directive.name != "reqntid") continue;
    uint64_t product = 1;
    const char* p = directive.args.c_str();
    while (*p != '\0') {
      if (*p >= '0' && *p <= '9') {
        char* end = nullptr;
        product *= std::strtoull(p, &end, 10);
        p = end;
      } else {
        ++p;
      }
    }
    return static_cast<uint32_t>(std::min<uint64_t>(product, 1024));
  }
  return 1024;
}

absl::StatusOr<Function> LowerFunction(const ptx::Function& source, const ptx::Module& module,
                                       const ModuleSymbols& globals) {
  Function function;
  function.name = source.name;
  function.is_entry = true;
  function.max_threads = MaxThreads(source);
  function.num_slots = static_cast<uint32_t>(SpecialSlot::kCount);
  LowerContext context(function, globals);

  TALLY_ASSIGN_OR_RETURN(ptx::KernelSignature signature, ptx::ComputeSignature(source));
  for (const ptx::ParamLayout& param : signature.params) {
    context.DeclareVariable(param.name, {Space::kParam, param.offset});
    function.param_layout.emplace_back(param.offset, param.size);
  }
  function.param_bytes = signature.param_buffer_size;

  // Module-scope shared variables are visible to every kernel, so each kernel's layout holds
  // them (before its own); they are few and small in practice.
  Layout layout;
  for (const ptx::TopLevel& item : module.items) {
    if (const auto* var = std::get_if<ptx::VarDecl>(&item.value)) {
      if (var->state_space == "shared") PlaceVariable(*var, layout, context);
    }
  }
  uint32_t count = 0;
  CollectDeclarations(source.body->statements, count, layout, context);
  uint64_t dynamic_base = AlignUp(layout.shared, 16);
  for (const auto& [name, space] : layout.dynamic_shared) {
    context.DeclareVariable(name, {space, dynamic_base});
  }
  function.static_shared_bytes = static_cast<uint32_t>(dynamic_base);
  function.local_bytes = static_cast<uint32_t>(AlignUp(layout.local, 16));

  function.code.reserve(count + 1);
  TALLY_RETURN_IF_ERROR(LowerStatements(source.body->statements, context));
  // Falling off the end of a kernel exits (and keeps a branch to a trailing label in range).
  Inst exit;
  exit.op = Op::kExit;
  function.code.push_back(exit);
  function.declared_registers = function.num_slots;
  return function;
}

}  // namespace

absl::StatusOr<std::vector<Function>> LowerModule(const ptx::Module& module,
                                                  const ModuleSymbols& globals) {
  std::vector<Function> functions;
  for (const ptx::TopLevel& item : module.items) {
    const auto* function = std::get_if<ptx::Function>(&item.value);
    if (function == nullptr || !function->is_entry || !function->body) continue;
    auto lowered = LowerFunction(*function, module, globals);
    if (!lowered.ok()) {
      return CudaError(ToCuResult(lowered.status()),
                       "kernel " + function->name + ": " + std::string(lowered.status().message()));
    }
    functions.push_back(std::move(*lowered));
  }
  return functions;
}

}  // namespace tally::emu::exec
