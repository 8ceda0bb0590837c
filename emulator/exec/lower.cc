// Lowering driver: lays out each kernel's variables, resolves names, inlines the `.func`s it
// calls, lowers the out-of-line ones after the kernel, and decodes its instructions
// (decode_*.cc) into the Program form.
//
// Calls are inlined where they can be: the callee is lowered into the caller's code in a frame
// of its own, its parameters bound to the caller's `.param` argument variables (which live in
// per-thread local memory), and `ret` becomes a branch past the inlined body. Divergent calls
// then need nothing beyond the interpreter's per-lane program counters, and cost nothing.
// Recursive and address-taken functions (call_graph.h) cannot be inlined: each is lowered once,
// after the kernel's code, with its local variables relative to a per-lane frame base, and
// called with kCall / left with kRet (exec/call_ops.cc).
#include "emulator/exec/lower.h"

#include <cstring>
#include <utility>

#include "common/log.h"
#include "common/status.h"
#include "emulator/exec/lower_context.h"
#include "emulator/internal/cuda_status.h"
#include "ptx_transform/kernel_signature.h"

namespace tally::emu::exec {

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

// Inlining stops here: a kernel this large after inlining is refused rather than lowered.
constexpr size_t kMaxInstructions = 1 << 20;
// A .func whose registers exceed this cannot be recursive here: each activation saves them all.
constexpr uint32_t kMaxSavedSlots = 1 << 16;

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// "A, B,  C" -> {"A", "B", "C"} (the arguments of .branchtargets and .calltargets).
std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items(1);
  for (char c : text) {
    if (c == ',') {
      items.emplace_back();
    } else if (c != ' ' && c != '\t' && c != '\n') {
      items.back().push_back(c);
    }
  }
  if (items.back().empty()) items.pop_back();
  return items;
}

class FunctionLowering {
 public:
  FunctionLowering(const ptx::Module& module, Function& function, const ModuleSymbols& globals,
                   const CallGraph& calls)
      : module_(module), calls_(calls), context_(function, globals, calls) {}

  absl::Status Lower(const ptx::Function& kernel);

 private:
  // Where a variable is declared: module scope, the kernel's body or a called .func's body.
  enum class Scope { kModule, kKernel, kCallee };
  absl::Status PlaceVariable(const ptx::VarDecl& var, Scope scope);
  absl::Status CollectVariables(const std::vector<ptx::Statement>& statements, Scope scope);
  void PlaceCalleeShared(const std::vector<ptx::Statement>& statements, bool in_callee,
                         absl::flat_hash_set<const ptx::Function*>& visited);
  uint64_t AllocateShared(const ptx::VarDecl& var);
  absl::Status LowerStatements(const std::vector<ptx::Statement>& statements);
  absl::Status LowerCall(const ptx::Instruction& call);
  absl::Status InlineCall(const ptx::Instruction& call, const CallOperands& operands,
                          const ptx::Function& callee);
  // A kCall to out-of-line function `index`, or an indirect one (nullopt).
  absl::Status RealCall(const ptx::Instruction& call, const CallOperands& operands,
                        std::optional<uint32_t> index);
  // Lowers out-of-line function `index` at the end of the code.
  absl::Status LowerOutOfLine(uint32_t index);
  // The caller's `.param` variables named by a call's return or argument list.
  absl::Status CallVariables(const ptx::Instruction& call, const ptx::Operand* list,
                             std::vector<LocalSymbol>& out);
  absl::Status LowerBuiltin(const ptx::Instruction& call, Builtin builtin, bool has_result,
                            const std::vector<std::pair<std::string, LocalSymbol>>& bindings);

  const ptx::Module& module_;
  const CallGraph& calls_;
  LowerContext context_;
  std::vector<uint32_t> unit_call_sites_;  // real call sites of the code being lowered
  uint64_t unit_local_variable_bytes_ = 0;  // its .local variables (not .param ones)
  uint64_t shared_bytes_ = 0;
  std::vector<std::pair<std::string, Scope>> dynamic_shared_;  // extern `[]` shared arrays
  // .shared variables declared in .func bodies: one block-wide instance per declaration, however
  // often the .func is inlined (like a C++ function's static `__shared__` variable, which nvcc
  // turns into one).
  absl::flat_hash_map<const ptx::VarDecl*, uint64_t> callee_shared_;
};

uint64_t FunctionLowering::AllocateShared(const ptx::VarDecl& var) {
  shared_bytes_ = AlignUp(shared_bytes_, VariableAlignment(var));
  uint64_t offset = shared_bytes_;
  shared_bytes_ += VariableBytes(var);
  return offset;
}

// Lays out the .shared variables of every .func reachable from `statements` before dynamic
// shared memory is placed after all static data.
void FunctionLowering::PlaceCalleeShared(const std::vector<ptx::Statement>& statements,
                                         bool in_callee,
                                         absl::flat_hash_set<const ptx::Function*>& visited) {
  for (const ptx::Statement& statement : statements) {
    if (const auto* var = std::get_if<Box<ptx::VarDecl>>(&statement.value)) {
      const ptx::VarDecl& decl = **var;
      bool is_static = decl.dims.empty() || decl.dims.back().has_value();
      if (in_callee && decl.state_space == "shared" && is_static) {
        callee_shared_[&decl] = AllocateShared(decl);
      }
    } else if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      PlaceCalleeShared(block->statements, in_callee, visited);
    } else if (const auto* call = std::get_if<ptx::Instruction>(&statement.value);
               call != nullptr && call->opcode == "call") {
      for (const ptx::Operand& operand : call->operands) {
        const ptx::Function* callee = operand.kind == ptx::Operand::Kind::kName
                                          ? module_.FindFunction(operand.name)
                                          : nullptr;
        if (callee != nullptr && callee->body && visited.insert(callee).second) {
          PlaceCalleeShared(callee->body->statements, /*in_callee=*/true, visited);
        }
      }
    }
  }
}

absl::Status FunctionLowering::PlaceVariable(const ptx::VarDecl& var, Scope scope) {
  if (var.state_space == "shared") {
    const bool dynamic = !var.dims.empty() && !var.dims.back().has_value();
    LocalSymbol symbol{Space::kShared, 0};
    if (dynamic && scope != Scope::kCallee) {
      dynamic_shared_.emplace_back(var.name, scope);
      return absl::OkStatus();
    }
    if (dynamic) {
      symbol.offset = context_.function().static_shared_bytes;  // placed by now
    } else if (scope == Scope::kCallee) {
      auto placed = callee_shared_.find(&var);
      if (placed == callee_shared_.end()) {
        return CudaError(CUDA_ERROR_INVALID_PTX, "shared variable " + var.name + " not laid out");
      }
      symbol.offset = placed->second;
    } else {
      symbol.offset = AllocateShared(var);
    }
    if (scope == Scope::kModule) {
      context_.DeclareModuleVariable(var.name, symbol);
    } else {
      context_.DeclareVariable(var.name, symbol);
    }
  } else if (var.state_space == "local" || var.state_space == "param") {
    // Body-level .param variables are call arguments: per thread, hence local memory. Each call
    // sequence block redeclares `param0` & co.; they all share the largest one's storage (the
    // blocks never overlap in time), since names here resolve per frame, not per block.
    uint64_t bytes = VariableBytes(var);
    if (var.state_space == "local") {
      unit_local_variable_bytes_ += AlignUp(bytes, VariableAlignment(var));
    }
    auto existing = context_.FindVariable(var.name);
    if (existing && existing->space == Space::kLocal && existing->size >= bytes) {
      return absl::OkStatus();
    }
    uint64_t offset = context_.AllocateLocal(bytes, VariableAlignment(var));
    context_.DeclareVariable(var.name, {Space::kLocal, offset, bytes});
  }
  return absl::OkStatus();
}

absl::Status FunctionLowering::CollectVariables(const std::vector<ptx::Statement>& statements,
                                                Scope scope) {
  for (const ptx::Statement& statement : statements) {
    if (const auto* var = std::get_if<Box<ptx::VarDecl>>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(PlaceVariable(**var, scope));
    } else if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(CollectVariables(block->statements, scope));
    }
  }
  return absl::OkStatus();
}

absl::Status FunctionLowering::LowerStatements(const std::vector<ptx::Statement>& statements) {
  context_.PushScope();
  const ptx::Label* previous_label = nullptr;
  for (const ptx::Statement& statement : statements) {
    const ptx::Label* label = std::get_if<ptx::Label>(&statement.value);
    if (const auto* regs = std::get_if<ptx::RegDecl>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(context_.DeclareRegisters(*regs));
    } else if (label != nullptr) {
      context_.DeclareLabel(label->name);
    } else if (const auto* directive = std::get_if<ptx::Directive>(&statement.value);
               directive != nullptr && directive->name == "branchtargets") {
      if (previous_label == nullptr) {
        return CudaError(CUDA_ERROR_INVALID_PTX, ".branchtargets without a label");
      }
      context_.DeclareBranchTargets(previous_label->name, SplitList(directive->args));
    } else if (const auto* instruction = std::get_if<ptx::Instruction>(&statement.value)) {
      if (instruction->opcode == "call") {
        TALLY_RETURN_IF_ERROR(LowerCall(*instruction));
      } else {
        TALLY_RETURN_IF_ERROR(DecodeInstruction(*instruction, context_, context_.function().code));
      }
      if (context_.function().code.size() > kMaxInstructions) {
        return CudaError(CUDA_ERROR_NOT_SUPPORTED, "kernel too large after inlining calls");
      }
    } else if (const auto* block = std::get_if<ptx::Block>(&statement.value)) {
      TALLY_RETURN_IF_ERROR(LowerStatements(block->statements));
    }
    previous_label = label;
  }
  context_.PopScope();
  return absl::OkStatus();
}

absl::Status FunctionLowering::CallVariables(const ptx::Instruction& call,
                                             const ptx::Operand* list,
                                             std::vector<LocalSymbol>& out) {
  if (list == nullptr) return absl::OkStatus();
  for (const ptx::Operand& actual : list->elements) {
    auto symbol = actual.kind == ptx::Operand::Kind::kName ? context_.FindVariable(actual.name)
                                                           : std::nullopt;
    if (!symbol || symbol->space != Space::kLocal) {
      return Unsupported(call, "arguments must be .param variables");
    }
    out.push_back(*symbol);
  }
  return absl::OkStatus();
}

// call{.uni} [(ret),] func[, (args)]  and  call{.uni} [(ret),] %reg, [(args),] prototype
// (PTX ISA, "call").
absl::Status FunctionLowering::LowerCall(const ptx::Instruction& call) {
  std::optional<CallOperands> operands = ParseCallOperands(call);
  if (!operands) return Unsupported(call, "malformed call");
  const std::string& name = operands->target->name;
  const ptx::Function* callee = module_.FindFunction(name);
  if (callee == nullptr) {
    if (operands->prototype == nullptr) return Unsupported(call, "calls an undeclared function");
    return RealCall(call, *operands, std::nullopt);  // through a register
  }
  if (auto it = calls_.index.find(name); it != calls_.index.end()) {
    return RealCall(call, *operands, it->second);
  }
  return InlineCall(call, *operands, *callee);
}

absl::Status FunctionLowering::InlineCall(const ptx::Instruction& call,
                                          const CallOperands& operands,
                                          const ptx::Function& callee) {
  const std::string& name = callee.name;
  if (context_.InFrameOf(name)) {  // the call graph makes recursive functions out-of-line
    return Unsupported(call, "unexpected recursive call: " + name);
  }
  // Bind the callee's parameter names to the caller's argument variables.
  auto bind = [&](const ptx::Operand* list, const std::vector<ptx::VarDecl>& formals,
                  std::vector<std::pair<std::string, LocalSymbol>>& out) -> absl::Status {
    std::vector<LocalSymbol> actuals;
    TALLY_RETURN_IF_ERROR(CallVariables(call, list, actuals));
    if (actuals.size() != formals.size()) return Unsupported(call, "argument count mismatch");
    for (size_t k = 0; k < actuals.size(); ++k) out.emplace_back(formals[k].name, actuals[k]);
    return absl::OkStatus();
  };
  std::vector<std::pair<std::string, LocalSymbol>> bindings;
  TALLY_RETURN_IF_ERROR(bind(operands.returns, callee.returns, bindings));
  TALLY_RETURN_IF_ERROR(bind(operands.arguments, callee.params, bindings));
  if (!callee.body) {
    static constexpr std::pair<const char*, Builtin> kBuiltins[] = {
        {"vprintf", Builtin::kPrintf},
        {"__assertfail", Builtin::kAssert},
        {"malloc", Builtin::kMalloc},
        {"free", Builtin::kFree}};
    for (const auto& [builtin_name, builtin] : kBuiltins) {
      if (name == builtin_name) {
        return LowerBuiltin(call, builtin, operands.returns != nullptr, bindings);
      }
    }
    return Unsupported(call, "calls a function without a body here: " + name);
  }

  // A predicated call branches around the inlined body when its guard is false.
  const bool guarded = !call.guard.empty();
  std::vector<Inst>& code = context_.function().code;
  const std::string after_call = "$tally_after_call" + std::to_string(code.size());
  if (guarded) {
    ptx::Instruction branch;
    branch.location = call.location;
    branch.opcode = "bra";
    branch.guard = call.guard;
    branch.guard_negated = !call.guard_negated;
    branch.operands.push_back(ptx::Operand::Name(after_call));
    TALLY_RETURN_IF_ERROR(DecodeInstruction(branch, context_, code));
  }
  context_.PushFrame();
  context_.SetFrameFunction(name);
  for (const auto& [formal, symbol] : bindings) context_.DeclareVariable(formal, symbol);
  TALLY_RETURN_IF_ERROR(CollectVariables(callee.body->statements, Scope::kCallee));
  TALLY_RETURN_IF_ERROR(LowerStatements(callee.body->statements));
  TALLY_RETURN_IF_ERROR(context_.PopFrame());
  if (guarded) context_.DeclareLabel(after_call);
  return absl::OkStatus();
}

absl::Status FunctionLowering::RealCall(const ptx::Instruction& call,
                                        const CallOperands& operands,
                                        std::optional<uint32_t> index) {
  Function& function = context_.function();
  CallSite site;
  std::vector<LocalSymbol> returns, arguments;
  TALLY_RETURN_IF_ERROR(CallVariables(call, operands.returns, returns));
  TALLY_RETURN_IF_ERROR(CallVariables(call, operands.arguments, arguments));
  for (const LocalSymbol& symbol : returns) site.returns.emplace_back(symbol.offset, symbol.size);
  for (const LocalSymbol& symbol : arguments) {
    site.arguments.emplace_back(symbol.offset, symbol.size);
  }
  Inst inst;
  inst.op = Op::kCall;
  inst.line = call.location.line;
  if (index) {
    const ptx::Function& callee = *calls_.out_of_line[*index];
    if (returns.size() != callee.returns.size() || arguments.size() != callee.params.size()) {
      return Unsupported(call, "argument count mismatch");
    }
    site.callee = *index;
  } else {
    TALLY_ASSIGN_OR_RETURN(inst.src[0], context_.Source(*operands.target, Type::kU64));
  }
  if (!call.guard.empty()) {
    TALLY_ASSIGN_OR_RETURN(inst.guard,
                           context_.Source(ptx::Operand::Name(call.guard), Type::kPred));
    if (call.guard_negated) inst.flags |= kFlagNegateGuard;
  }
  site.return_pc = static_cast<uint32_t>(function.code.size() + 1);
  inst.target = static_cast<uint32_t>(function.call_sites.size());
  unit_call_sites_.push_back(inst.target);
  function.call_sites.push_back(std::move(site));
  function.code.push_back(inst);
  return absl::OkStatus();
}

// The function's formals first (returns, then parameters, each at its alignment), then its own
// variables: all relative to the frame base, so each activation has its own.
absl::Status FunctionLowering::LowerOutOfLine(uint32_t index) {
  const ptx::Function& source = *calls_.out_of_line[index];
  Function& function = context_.function();
  Callee& callee = function.callees[index];
  callee.entry = static_cast<uint32_t>(function.code.size());
  const uint32_t first_slot = function.num_slots;
  context_.PushFrame();
  context_.SetFrameFunction(source.name);
  context_.SetOutOfLine(index);
  auto place_formals = [&](const std::vector<ptx::VarDecl>& formals,
                           std::vector<std::pair<uint32_t, uint32_t>>& layout) {
    for (const ptx::VarDecl& formal : formals) {
      uint64_t bytes = VariableBytes(formal);
      uint64_t offset = context_.AllocateLocal(bytes, VariableAlignment(formal));
      context_.DeclareVariable(formal.name, {Space::kLocal, offset, bytes});
      layout.emplace_back(static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes));
    }
  };
  place_formals(source.returns, callee.returns);
  place_formals(source.params, callee.params);
  TALLY_RETURN_IF_ERROR(CollectVariables(source.body->statements, Scope::kCallee));
  TALLY_RETURN_IF_ERROR(LowerStatements(source.body->statements));
  TALLY_RETURN_IF_ERROR(context_.PopFrame());
  // Falling off the end of a function returns (and keeps a branch to a trailing label in range).
  Inst ret;
  ret.op = Op::kRet;
  ret.target = index;
  function.code.push_back(ret);
  callee.frame_bytes = static_cast<uint32_t>(AlignUp(context_.TakeLocalBytes(), 16));
  callee.stack_charge = static_cast<uint32_t>(
      kCallRecordBytes + AlignUp(std::exchange(unit_local_variable_bytes_, 0), 16));
  if (calls_.recursive[index]) {
    if (function.num_slots - first_slot > kMaxSavedSlots) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                       "recursive function " + source.name + " uses too many registers");
    }
    callee.saved_begin = first_slot;
    callee.saved_end = function.num_slots;
  }
  for (uint32_t site : std::exchange(unit_call_sites_, {})) {
    function.call_sites[site].caller_frame_bytes = callee.frame_bytes;
  }
  return absl::OkStatus();
}

// vprintf(format, arguments), __assertfail(message, file, line, function, char size),
// malloc(size) and free(pointer): one kBuiltin instruction whose sources hold the local offsets
// of the argument variables (and `offset` the result variable's).
absl::Status FunctionLowering::LowerBuiltin(
    const ptx::Instruction& call, Builtin builtin, bool has_result,
    const std::vector<std::pair<std::string, LocalSymbol>>& bindings) {
  Inst inst;
  inst.op = Op::kBuiltin;
  inst.mod = static_cast<uint8_t>(builtin);
  inst.line = call.location.line;
  size_t first_argument = has_result ? 1 : 0;
  constexpr size_t kArguments[] = {2, 5, 1, 1};  // by Builtin
  size_t expected = kArguments[static_cast<int>(builtin)];
  if (builtin == Builtin::kMalloc && !has_result) {
    return Unsupported(call, "malloc's result must be received");
  }
  if (bindings.size() != first_argument + expected) {
    return Unsupported(call, "unexpected signature for a runtime device function");
  }
  for (size_t k = 0; k < 4 && first_argument + k < bindings.size(); ++k) {
    inst.src[k] = context_.Constant(bindings[first_argument + k].second.offset);
  }
  if (has_result) {
    inst.flags |= kFlagHasResult;
    inst.offset = static_cast<int64_t>(bindings[0].second.offset);
  }
  if (!call.guard.empty()) {
    TALLY_ASSIGN_OR_RETURN(inst.guard,
                           context_.Source(ptx::Operand::Name(call.guard), Type::kPred));
    if (call.guard_negated) inst.flags |= kFlagNegateGuard;
  }
  if (builtin == Builtin::kMalloc || builtin == Builtin::kFree)
    context_.function().uses_heap = true;
  context_.function().code.push_back(inst);
  return absl::OkStatus();
}

// The numbers of a directive's arguments (`.maxntid 256, 1, 1` -> 256 1 1).
std::vector<uint64_t> DirectiveNumbers(const ptx::Directive& directive) {
  std::vector<uint64_t> numbers;
  const char* p = directive.args.c_str();
  while (*p != '\0') {
    if (*p >= '0' && *p <= '9') {
      char* end = nullptr;
      numbers.push_back(std::strtoull(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return numbers;
}

// The performance-tuning and cluster dimension directives (PTX ISA, "Performance-Tuning
// Directives", "Cluster Dimension Directives"): .maxntid / .reqntid limit the block size,
// .reqnctapercluster fixes the cluster shape, .explicitcluster requires one at launch,
// .maxclusterrank bounds its size.
absl::Status ApplyDirectives(const ptx::Function& kernel, Function& function) {
  for (const ptx::Directive& directive : kernel.performance_directives) {
    const std::vector<uint64_t> numbers = DirectiveNumbers(directive);
    if (directive.name == "maxntid" || directive.name == "reqntid") {
      uint64_t product = 1;
      for (uint64_t n : numbers) product *= n;
      function.max_threads = static_cast<uint32_t>(std::min<uint64_t>(product, 1024));
    } else if (directive.name == "reqnctapercluster") {
      if (numbers.empty() || numbers.size() > 3) {
        return CudaError(CUDA_ERROR_INVALID_PTX, ".reqnctapercluster needs 1 to 3 dimensions");
      }
      for (size_t i = 0; i < 3; ++i) {
        uint64_t n = i < numbers.size() ? numbers[i] : 1;
        if (n == 0 || n > kMaxClusterSize) {
          return CudaError(CUDA_ERROR_INVALID_PTX, ".reqnctapercluster dimension out of range");
        }
        function.required_cluster[i] = static_cast<uint32_t>(n);
      }
      function.explicit_cluster = true;
    } else if (directive.name == "explicitcluster") {
      function.explicit_cluster = true;
    } else if (directive.name == "maxclusterrank") {
      if (numbers.size() != 1 || numbers[0] == 0) {
        return CudaError(CUDA_ERROR_INVALID_PTX, ".maxclusterrank needs one positive number");
      }
      function.max_cluster_rank = static_cast<uint32_t>(std::min<uint64_t>(numbers[0], 1u << 16));
    }
  }
  return absl::OkStatus();
}

absl::Status FunctionLowering::Lower(const ptx::Function& kernel) {
  Function& function = context_.function();
  TALLY_RETURN_IF_ERROR(ApplyDirectives(kernel, function));
  function.num_slots = static_cast<uint32_t>(SpecialSlot::kCount);
  context_.PushFrame();
  context_.SetFrameFunction(kernel.name);
  TALLY_ASSIGN_OR_RETURN(ptx::KernelSignature signature, ptx::ComputeSignature(kernel));
  for (const ptx::ParamLayout& param : signature.params) {
    context_.DeclareVariable(param.name, {Space::kParam, param.offset});
    function.param_layout.emplace_back(param.offset, param.size);
  }
  function.param_bytes = signature.param_buffer_size;

  // Module-scope shared variables are visible to every kernel, so each kernel's layout holds
  // them (before its own); they are few and small in practice.
  for (const ptx::TopLevel& item : module_.items) {
    if (const auto* var = std::get_if<ptx::VarDecl>(&item.value)) {
      if (var->state_space == "shared") TALLY_RETURN_IF_ERROR(PlaceVariable(*var, Scope::kModule));
    }
  }
  TALLY_RETURN_IF_ERROR(CollectVariables(kernel.body->statements, Scope::kKernel));
  absl::flat_hash_set<const ptx::Function*> reached = {&kernel};
  PlaceCalleeShared(kernel.body->statements, /*in_callee=*/false, reached);
  // Out-of-line functions reached only through indirect calls too.
  const std::vector<uint32_t> out_of_line = calls_.Reachable(kernel);
  for (uint32_t index : out_of_line) {
    const ptx::Function* callee = calls_.out_of_line[index];
    if (reached.insert(callee).second) {
      PlaceCalleeShared(callee->body->statements, /*in_callee=*/true, reached);
    }
  }
  // Dynamic shared memory (extern `[]` arrays) starts after all static data, 16-byte aligned.
  uint64_t dynamic_base = AlignUp(shared_bytes_, 16);
  for (const auto& [name, scope] : dynamic_shared_) {
    if (scope == Scope::kModule) {
      context_.DeclareModuleVariable(name, {Space::kShared, dynamic_base});
    } else {
      context_.DeclareVariable(name, {Space::kShared, dynamic_base});
    }
  }
  function.static_shared_bytes = static_cast<uint32_t>(dynamic_base);

  TALLY_RETURN_IF_ERROR(LowerStatements(kernel.body->statements));
  TALLY_RETURN_IF_ERROR(context_.PopFrame());
  // Falling off the end of a kernel exits (and keeps a branch to a trailing label in range).
  Inst exit;
  exit.op = Op::kExit;
  function.code.push_back(exit);
  function.local_bytes = static_cast<uint32_t>(AlignUp(context_.TakeLocalBytes(), 16));
  unit_local_variable_bytes_ = 0;
  for (uint32_t site : std::exchange(unit_call_sites_, {})) {
    function.call_sites[site].caller_frame_bytes = function.local_bytes;
  }

  if (out_of_line.empty()) return absl::OkStatus();
  function.callees.resize(calls_.out_of_line.size());
  for (size_t i = 0; i < calls_.out_of_line.size(); ++i) {
    function.callees[i].name = calls_.out_of_line[i]->name;
  }
  for (uint32_t index : out_of_line) {
    if (absl::Status status = LowerOutOfLine(index); !status.ok()) {
      return CudaError(ToCuResult(status), "in " + calls_.out_of_line[index]->name + ": " +
                                               std::string(status.message()));
    }
    if (function.code.size() > kMaxInstructions) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "kernel too large after inlining calls");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Function>> LowerModule(const ptx::Module& module,
                                                  const ModuleSymbols& globals,
                                                  const CallGraph& calls) {
  std::vector<Function> functions;
  for (const ptx::TopLevel& item : module.items) {
    const auto* kernel = std::get_if<ptx::Function>(&item.value);
    if (kernel == nullptr || !kernel->is_entry || !kernel->body) continue;
    Function function;
    function.name = kernel->name;
    FunctionLowering lowering(module, function, globals, calls);
    if (absl::Status status = lowering.Lower(*kernel); !status.ok()) {
      const std::string why = "kernel " + kernel->name + ": " + std::string(status.message());
      // Invalid PTX refuses the module, as NVIDIA's compiler would; a construct the emulated GPU
      // does not implement makes only this kernel unusable (NVIDIA's device would run it).
      if (ToCuResult(status) != CUDA_ERROR_NOT_SUPPORTED) return CudaError(ToCuResult(status), why);
      TALLY_LOG_ERROR("emu: {}; the emulated GPU cannot run this kernel, and its launches fail",
                      why);
      Function unusable;
      unusable.name = kernel->name;
      unusable.unusable = CudaError(CUDA_ERROR_INVALID_PTX, why);
      function = std::move(unusable);
    }
    functions.push_back(std::move(function));
  }
  return functions;
}

}  // namespace tally::emu::exec
