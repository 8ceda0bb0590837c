// Operand resolution: registers by scope, special registers, symbols, constant expressions.
#include "emulator/exec/lower_context.h"

#include <bit>
#include <cstring>
#include <optional>
#include <string_view>

#include "common/status.h"
#include "emulator/exec/float16.h"
#include "emulator/internal/cuda_status.h"

namespace tally::emu::exec {
namespace {

struct SpecialName {
  const char* name;
  char component;
  SpecialSlot slot;
};

constexpr SpecialName kSpecials[] = {
    {"%tid", 'x', SpecialSlot::kTidX},
    {"%tid", 'y', SpecialSlot::kTidY},
    {"%tid", 'z', SpecialSlot::kTidZ},
    {"%ntid", 'x', SpecialSlot::kNtidX},
    {"%ntid", 'y', SpecialSlot::kNtidY},
    {"%ntid", 'z', SpecialSlot::kNtidZ},
    {"%ctaid", 'x', SpecialSlot::kCtaidX},
    {"%ctaid", 'y', SpecialSlot::kCtaidY},
    {"%ctaid", 'z', SpecialSlot::kCtaidZ},
    {"%nctaid", 'x', SpecialSlot::kNctaidX},
    {"%nctaid", 'y', SpecialSlot::kNctaidY},
    {"%nctaid", 'z', SpecialSlot::kNctaidZ},
    {"%laneid", 0, SpecialSlot::kLaneId},
    {"%warpid", 0, SpecialSlot::kWarpId},
    {"%nwarpid", 0, SpecialSlot::kNwarpId},
    {"%smid", 0, SpecialSlot::kSmId},
    {"%nsmid", 0, SpecialSlot::kNsmId},
    {"%gridid", 0, SpecialSlot::kGridId},
    {"%lanemask_eq", 0, SpecialSlot::kLanemaskEq},
    {"%lanemask_lt", 0, SpecialSlot::kLanemaskLt},
    {"%lanemask_le", 0, SpecialSlot::kLanemaskLe},
    {"%lanemask_gt", 0, SpecialSlot::kLanemaskGt},
    {"%lanemask_ge", 0, SpecialSlot::kLanemaskGe},
    {"%dynamic_smem_size", 0, SpecialSlot::kDynamicSmemSize},
    {"%total_smem_size", 0, SpecialSlot::kTotalSmemSize},
    {"%aggr_smem_size", 0, SpecialSlot::kAggrSmemSize},
    {"%reserved_smem_offset_begin", 0, SpecialSlot::kReservedSmemBegin},
    {"%reserved_smem_offset_end", 0, SpecialSlot::kReservedSmemEnd},
    {"%reserved_smem_offset_cap", 0, SpecialSlot::kReservedSmemCap},
    {"%reserved_smem_offset_0", 0, SpecialSlot::kReservedSmemOffset0},
    {"%reserved_smem_offset_1", 0, SpecialSlot::kReservedSmemOffset1},
    {"%envreg1", 0, SpecialSlot::kEnvReg1},
    {"%envreg2", 0, SpecialSlot::kEnvReg2},
    {"%cluster_ctaid", 'x', SpecialSlot::kClusterCtaidX},
    {"%cluster_ctaid", 'y', SpecialSlot::kClusterCtaidY},
    {"%cluster_ctaid", 'z', SpecialSlot::kClusterCtaidZ},
    {"%clusterid", 'x', SpecialSlot::kClusterIdX},
    {"%clusterid", 'y', SpecialSlot::kClusterIdY},
    {"%clusterid", 'z', SpecialSlot::kClusterIdZ},
    {"%cluster_ctarank", 0, SpecialSlot::kClusterCtarank},
    {"%cluster_nctaid", 'x', SpecialSlot::kClusterNctaidX},
    {"%cluster_nctaid", 'y', SpecialSlot::kClusterNctaidY},
    {"%cluster_nctaid", 'z', SpecialSlot::kClusterNctaidZ},
    {"%nclusterid", 'x', SpecialSlot::kNclusterIdX},
    {"%nclusterid", 'y', SpecialSlot::kNclusterIdY},
    {"%nclusterid", 'z', SpecialSlot::kNclusterIdZ},
    {"%cluster_nctarank", 0, SpecialSlot::kClusterNctarank},
    {"%is_explicit_cluster", 0, SpecialSlot::kIsExplicitCluster},
};

// The vector special registers (PTX ISA, "Special Registers": `.sreg .v4 .u32 %tid;` and the
// like), whose fourth element `.w` "is unused and always returns zero".
constexpr std::string_view kVectorSpecials[] = {"%tid",           "%ntid",          "%ctaid",
                                                "%nctaid",        "%clusterid",     "%nclusterid",
                                                "%cluster_ctaid", "%cluster_nctaid"};

}  // namespace

bool IsVectorSpecialRegister(std::string_view name) {
  for (std::string_view vector : kVectorSpecials) {
    if (name == vector) return true;
  }
  return false;
}

namespace {

// Special registers with one value for every thread of every launch. The performance monitor
// counters %pm0..%pm7 and %pm0_64..%pm7_64 have "currently undefined" behaviour (PTX ISA,
// "Special Registers: %pm0..%pm7"): nothing is counted here, they read 0. %current_graph_exec is
// "0 if the kernel is not executing as part of a device graph": the emulator has none.
std::optional<uint64_t> ConstantSpecial(const ptx::Operand& operand) {
  const std::string& name = operand.name;
  if (operand.component == 'w') {
    return IsVectorSpecialRegister(name) ? std::optional<uint64_t>(0) : std::nullopt;
  }
  if (operand.component != 0) return std::nullopt;
  if (name == "%current_graph_exec") return 0;
  if (name.size() >= 4 && name.starts_with("%pm") && name[3] >= '0' && name[3] <= '7' &&
      (name.size() == 4 || name.substr(4) == "_64")) {
    return 0;
  }
  return std::nullopt;
}

absl::Status InvalidPtx(std::string message) { return CudaError(CUDA_ERROR_INVALID_PTX, message); }

uint64_t FloatBitsFor(const ptx::Expr& expr, Type type) {
  bool is_f32_literal = expr.float_form == ptx::Expr::FloatForm::kHexF32;
  if (IsHalf(type) && !IsPackedHalf(type)) {
    double value = is_f32_literal ? std::bit_cast<float>(static_cast<uint32_t>(expr.float_bits))
                                  : std::bit_cast<double>(expr.float_bits);
    return DoubleToHalf(value, FormatOf(type), Rounding::kRn);
  }
  if (type == Type::kF32 && !is_f32_literal) {
    return std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(expr.float_bits)));
  }
  if (type == Type::kF64 && is_f32_literal) {
    return std::bit_cast<uint64_t>(
        static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(expr.float_bits))));
  }
  return expr.float_bits;
}

}  // namespace

absl::Status Unsupported(const ptx::Instruction& instruction, std::string_view why) {
  std::string name = instruction.opcode;
  for (const std::string& modifier : instruction.modifiers) name += "." + modifier;
  return CudaError(CUDA_ERROR_NOT_SUPPORTED, "line " + std::to_string(instruction.location.line) +
                                                 ": unsupported instruction `" + name +
                                                 "`: " + std::string(why));
}

uint32_t LowerContext::NewSlot() { return function_.num_slots++; }

uint32_t LowerContext::Constant(uint64_t value) {
  auto [it, inserted] = constant_slots_.try_emplace(value, 0);
  if (inserted) {
    it->second = NewSlot();
    function_.constants.emplace_back(it->second, value);
  }
  return it->second;
}

absl::Status LowerContext::DeclareRegisters(const ptx::RegDecl& decl) {
  if (decl.vector_width != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                     "vector registers (.reg .v" + std::to_string(decl.vector_width) + ")");
  }
  auto& scope = frames_.back().scopes.back();
  auto declare = [&](const std::string& name) {
    uint32_t slot = NewSlot();
    scope[name] = slot;
    if (decl.type == "pred") predicate_slots_.insert(slot);
  };
  for (const auto& entry : decl.entries) {
    if (!entry.count) {
      declare(entry.name);
      continue;
    }
    for (uint32_t i = 0; i < *entry.count; ++i) declare(entry.name + std::to_string(i));
  }
  return absl::OkStatus();
}

std::optional<uint32_t> LowerContext::FindRegister(const std::string& name) const {
  const auto& scopes = frames_.back().scopes;
  for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
    if (auto it = scope->find(name); it != scope->end()) return it->second;
  }
  return std::nullopt;
}

std::optional<LocalSymbol> LowerContext::FindVariable(const std::string& name) const {
  const auto& locals = frames_.back().locals;
  if (auto it = locals.find(name); it != locals.end()) return it->second;
  if (auto it = module_variables_.find(name); it != module_variables_.end()) return it->second;
  return std::nullopt;
}

uint64_t LowerContext::AllocateLocal(uint64_t bytes, uint64_t alignment) {
  uint64_t offset = (local_bytes_ + alignment - 1) / alignment * alignment;
  local_bytes_ = offset + bytes;
  return offset;
}

void LowerContext::BranchTo(const std::string& label) {
  frames_.back().branches.emplace_back(next_index(), label);
}

bool LowerContext::InFrameOf(const std::string& function_name) const {
  for (const Frame& frame : frames_)
    if (frame.function == function_name) return true;
  return false;
}

absl::Status LowerContext::PopFrame() {
  Frame& frame = frames_.back();
  for (const auto& [index, label] : frame.branches) {
    auto it = frame.labels.find(label);
    if (it == frame.labels.end()) return InvalidPtx("unknown label `" + label + "`");
    function_.code[index].target = it->second;
  }
  for (const auto& [index, list] : frame.indexed_branches) {
    auto it = frame.target_lists.find(list);
    if (it == frame.target_lists.end()) return InvalidPtx("unknown .branchtargets `" + list + "`");
    std::vector<uint32_t> targets;
    for (const std::string& label : it->second) {
      auto target = frame.labels.find(label);
      if (target == frame.labels.end()) return InvalidPtx("unknown label `" + label + "`");
      targets.push_back(target->second);
    }
    function_.code[index].target = static_cast<uint32_t>(function_.branch_tables.size());
    function_.branch_tables.push_back(std::move(targets));
  }
  for (uint32_t index : frame.returns) function_.code[index].target = next_index();
  frames_.pop_back();
  return absl::OkStatus();
}

std::optional<uint64_t> LowerContext::FrameOffset(const ptx::Operand& operand) const {
  if (operand.kind != ptx::Operand::Kind::kName || !frames_.front().out_of_line ||
      FindRegister(operand.name)) {
    return std::nullopt;
  }
  auto local = FindVariable(operand.name);
  if (!local || local->space != Space::kLocal) return std::nullopt;
  return local->offset;
}

absl::StatusOr<uint64_t> LowerContext::SymbolValue(const std::string& name) {
  if (auto local = FindVariable(name)) {
    if (local->space == Space::kLocal && frames_.front().out_of_line) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                       "the address of `" + name + "` in a .func's frame used outside mov/[]");
    }
    return local->offset;
  }
  if (auto it = globals_.find(name); it != globals_.end()) return it->second.address;
  if (auto it = calls_.index.find(name); it != calls_.index.end()) {
    return FunctionAddress(it->second);
  }
  return InvalidPtx("unknown name `" + name + "`");
}

absl::StatusOr<uint64_t> LowerContext::Evaluate(const ptx::Expr& expr) {
  using Kind = ptx::Expr::Kind;
  switch (expr.kind) {
    case Kind::kInt:
      return static_cast<uint64_t>(expr.int_value);
    case Kind::kFloat:
      return expr.float_bits;
    case Kind::kSymbol:
      if (expr.text == ptx::kWarpSizeConstant) return static_cast<uint64_t>(ptx::kWarpSize);
      return SymbolValue(expr.text);
    case Kind::kCall: {
      // generic(var): the variable's generic address (PTX ISA, "Variable Initializers").
      if (expr.text != "generic" || expr.children.size() != 1 ||
          expr.children[0].kind != Kind::kSymbol) {
        return InvalidPtx("unsupported constant expression `" + expr.text + "(...)`");
      }
      const std::string& name = expr.children[0].text;
      auto local = FindVariable(name);
      if (!local) return SymbolValue(name);
      if (local->space == Space::kLocal && frames_.front().out_of_line) {
        // A .func's local offsets are relative to its frame; the generic address is not.
        return CudaError(CUDA_ERROR_NOT_SUPPORTED, "generic(" + name + ") inside a .func");
      }
      uint64_t window = local->space == Space::kShared  ? kSharedWindow
                        : local->space == Space::kLocal ? kLocalWindow
                                                        : kParamWindow;
      return window + local->offset;
    }
    case Kind::kUnary: {
      TALLY_ASSIGN_OR_RETURN(uint64_t value, Evaluate(expr.children.at(0)));
      if (expr.text == "-") return 0 - value;
      if (expr.text == "~") return ~value;
      if (expr.text == "!") return static_cast<uint64_t>(value == 0);
      return InvalidPtx("unknown unary operator " + expr.text);
    }
    case Kind::kBinary: {
      TALLY_ASSIGN_OR_RETURN(uint64_t a, Evaluate(expr.children.at(0)));
      TALLY_ASSIGN_OR_RETURN(uint64_t b, Evaluate(expr.children.at(1)));
      const std::string& op = expr.text;
      if (op == "+") return a + b;
      if (op == "-") return a - b;
      if (op == "*") return a * b;
      if (op == "&") return a & b;
      if (op == "|") return a | b;
      if (op == "^") return a ^ b;
      if (op == "<<") return b >= 64 ? 0 : a << b;
      if (op == ">>") return b >= 64 ? 0 : static_cast<uint64_t>(static_cast<int64_t>(a) >> b);
      if ((op == "/" || op == "%") && b != 0) {
        return op == "/" ? static_cast<uint64_t>(static_cast<int64_t>(a) / static_cast<int64_t>(b))
                         : static_cast<uint64_t>(static_cast<int64_t>(a) % static_cast<int64_t>(b));
      }
      return InvalidPtx("unsupported constant operator " + op);
    }
    case Kind::kList:
      return InvalidPtx("an aggregate is not a scalar operand");
  }
  return InvalidPtx("bad constant expression");
}

absl::StatusOr<uint32_t> LowerContext::Source(const ptx::Operand& operand, Type type) {
  using Kind = ptx::Operand::Kind;
  if (operand.kind == Kind::kImmediate) {
    const ptx::Expr& expr = *operand.expr;
    if (expr.kind == ptx::Expr::Kind::kFloat) return Constant(FloatBitsFor(expr, type));
    TALLY_ASSIGN_OR_RETURN(uint64_t value, Evaluate(expr));
    // An integer literal used as a float operand means that value.
    if (type == Type::kF32 && expr.kind == ptx::Expr::Kind::kInt) {
      value = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int64_t>(value)));
    } else if (type == Type::kF64 && expr.kind == ptx::Expr::Kind::kInt) {
      value = std::bit_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(value)));
    }
    return Constant(value);
  }
  if (operand.kind != Kind::kName) return InvalidPtx("expected a register or a value");
  if (operand.component == 0) {
    if (auto slot = FindRegister(operand.name)) return *slot;
  }
  for (const SpecialName& special : kSpecials) {
    if (operand.name == special.name && operand.component == special.component) {
      if (special.slot >= SpecialSlot::kClusterCtaidX && special.slot <= SpecialSlot::kClusterCtarank) {
        function_.reads_cluster_position = true;
      }
      if (special.slot >= SpecialSlot::kReservedSmemBegin &&
          special.slot <= SpecialSlot::kReservedSmemOffset1) {
        function_.uses_reserved_shared = true;
      }
      return static_cast<uint32_t>(special.slot);
    }
  }
  if (auto value = ConstantSpecial(operand)) return Constant(*value);
  if (!operand.name.empty() && operand.name[0] == '%' && !FindVariable(operand.name)) {
    // Special registers of the PTX ISA that the emulator cannot give a meaningful value: the
    // driver-defined environment registers other than the grid workspace's (their meaning is
    // the driver's, undocumented) and %hwtaskid; %clock and %globaltimer forms outside mov
    // (decode_alu.cc reads the clocks). Any other %name is simply undeclared.
    constexpr std::string_view kUnsupported[] = {"%envreg", "%hwtaskid", "%globaltimer",
                                                 "%clock"};
    for (std::string_view prefix : kUnsupported) {
      if (std::string_view(operand.name).starts_with(prefix)) {
        return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                         "special register `" + operand.name + "` is not implemented");
      }
    }
    return InvalidPtx("undeclared register `" + operand.name + "`");
  }
  TALLY_ASSIGN_OR_RETURN(uint64_t address, SymbolValue(operand.name));
  return Constant(address);
}

absl::StatusOr<uint32_t> LowerContext::Dest(const ptx::Operand& operand) {
  if (operand.kind == ptx::Operand::Kind::kSink) return NewSlot();
  if (operand.kind == ptx::Operand::Kind::kName && operand.component == 0) {
    if (auto slot = FindRegister(operand.name)) return *slot;
  }
  return InvalidPtx("destination `" + operand.name + "` is not a declared register");
}

absl::StatusOr<LowerContext::Address> LowerContext::AddressOf(const ptx::Operand& operand) {
  if (operand.kind != ptx::Operand::Kind::kAddress || operand.elements.size() != 1) {
    return InvalidPtx("expected an address operand [base+offset]");
  }
  const ptx::Operand& base = operand.elements[0];
  if (base.kind == ptx::Operand::Kind::kImmediate) {
    TALLY_ASSIGN_OR_RETURN(uint64_t value, Evaluate(*base.expr));
    return Address{Constant(value), 0, std::nullopt};
  }
  if (auto offset = FrameOffset(base)) {
    return Address{static_cast<uint32_t>(SpecialSlot::kFrameBase),
                   static_cast<int64_t>(*offset) + base.offset, Space::kLocal};
  }
  TALLY_ASSIGN_OR_RETURN(uint32_t slot, Source(base, Type::kU64));
  std::optional<Space> symbol_space;
  if (!FindRegister(base.name)) {
    if (auto local = FindVariable(base.name)) symbol_space = local->space;
  }
  return Address{slot, base.offset, symbol_space};
}

}  // namespace tally::emu::exec
