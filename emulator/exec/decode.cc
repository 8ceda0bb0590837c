// The opcode dispatch of the decoder: a table from PTX opcode to the Decoder member that decodes
// it (sorted by opcode, looked up by binary search), Decoder::Decode, which checks what every
// instruction shares (f16/bf16 forms, unused modifiers, the guard), and the entry point
// DecodeInstruction.
#include <algorithm>

#include "emulator/exec/decoder.h"

namespace tally::emu::exec {
namespace internal {

const Decoder::Opcode* Decoder::FindOpcode(std::string_view name) {
  using D = Decoder;
  static constexpr Opcode kOpcodes[] = {
      {"abs", [](D& d) { return d.Arithmetic(Op::kAbs, 1); }},
      {"activemask", [](D& d) { return d.Typed(Op::kActiveMask, 0); }},
      {"add", [](D& d) { return d.Arithmetic(Op::kAdd, 2); }},
      {"addc", [](D& d) { return d.Arithmetic(Op::kAdd, 2); }},
      {"and", [](D& d) { return d.Arithmetic(Op::kAnd, 2); }},
      {"atom", [](D& d) { return d.Atom(true); }},
      {"bar", [](D& d) { return d.Barrier(); }},
      {"barrier", [](D& d) { return d.Barrier(); }},
      {"bfe", [](D& d) { return d.Arithmetic(Op::kBfe, 3); }},
      {"bfi", [](D& d) { return d.Arithmetic(Op::kBfi, 4); }},
      {"bfind", [](D& d) { return d.Bfind(); }},
      {"bra", [](D& d) { return d.Bra(); }},
      {"brev", [](D& d) { return d.Arithmetic(Op::kBrev, 1); }},
      {"brkpt", [](D& d) { return d.Plain(Op::kTrap); }},
      {"brx", [](D& d) { return d.Brx(); }},
      {"clz", [](D& d) { return d.Arithmetic(Op::kClz, 1); }},
      {"cnot", [](D& d) { return d.Arithmetic(Op::kCnot, 1); }},
      {"copysign", [](D& d) { return d.Arithmetic(Op::kCopysign, 2); }},
      {"cos", [](D& d) { return d.Arithmetic(Op::kCos, 1); }},
      {"cp", [](D& d) { return d.CpAsync(); }},
      {"cvt", [](D& d) { return d.Cvt(); }},
      {"cvta", [](D& d) { return d.Cvta(); }},
      {"div", [](D& d) { return d.Arithmetic(Op::kDiv, 2); }},
      {"dp2a", [](D& d) { return d.NarrowInt(); }},
      {"dp4a", [](D& d) { return d.NarrowInt(); }},
      {"ex2", [](D& d) { return d.Arithmetic(Op::kEx2, 1); }},
      {"exit", [](D& d) { return d.Plain(Op::kExit); }},
      {"fence", [](D& d) { return d.Fence(); }},
      {"fma", [](D& d) { return d.Arithmetic(Op::kFma, 3); }},
      {"getctarank", [](D& d) { return d.Mapa(true); }},
      {"isspacep", [](D& d) { return d.Isspacep(); }},
      {"ld", [](D& d) { return d.Memory(Op::kLd); }},
      {"ldmatrix", [](D& d) { return d.Matrix(); }},
      {"lg2", [](D& d) { return d.Arithmetic(Op::kLg2, 1); }},
      {"lop3", [](D& d) { return d.Lop3(); }},
      {"mad", [](D& d) { return d.MulMad(Op::kMad); }},
      {"mad24", [](D& d) { return d.NarrowInt(); }},
      {"madc", [](D& d) { return d.MulMad(Op::kMad); }},
      {"mapa", [](D& d) { return d.Mapa(false); }},
      {"match", [](D& d) { return d.Match(); }},
      {"max", [](D& d) { return d.Arithmetic(Op::kMax, 2); }},
      {"mbarrier", [](D& d) { return d.Mbarrier(); }},
      {"membar", [](D& d) { return d.Fence(); }},
      {"min", [](D& d) { return d.Arithmetic(Op::kMin, 2); }},
      {"mma", [](D& d) { return d.Matrix(); }},
      {"mov", [](D& d) { return d.Mov(); }},
      {"movmatrix", [](D& d) { return d.Matrix(); }},
      {"mul", [](D& d) { return d.MulMad(Op::kMul); }},
      {"mul24", [](D& d) { return d.NarrowInt(); }},
      {"nanosleep", [](D& d) { return d.Nop(); }},
      {"neg", [](D& d) { return d.Arithmetic(Op::kNeg, 1); }},
      {"not", [](D& d) { return d.Arithmetic(Op::kNot, 1); }},
      {"or", [](D& d) { return d.Arithmetic(Op::kOr, 2); }},
      {"pmevent", [](D& d) { return d.Nop(); }},
      {"popc", [](D& d) { return d.Arithmetic(Op::kPopc, 1); }},
      {"prefetch", nullptr},
      {"prefetchu", nullptr},
      {"prmt", [](D& d) { return d.Arithmetic(Op::kPrmt, 3); }},
      {"rcp", [](D& d) { return d.Arithmetic(Op::kRcp, 1); }},
      {"red", [](D& d) { return d.Atom(false); }},
      {"redux", [](D& d) { return d.Redux(); }},
      {"rem", [](D& d) { return d.Arithmetic(Op::kRem, 2); }},
      {"ret", [](D& d) { return d.Ret(); }},
      {"rsqrt", [](D& d) { return d.Arithmetic(Op::kRsqrt, 1); }},
      {"sad", [](D& d) { return d.Arithmetic(Op::kSad, 3); }},
      {"selp", [](D& d) { return d.Selp(); }},
      {"set", [](D& d) { return d.Compare(Op::kSet); }},
      {"setp", [](D& d) { return d.Compare(Op::kSetp); }},
      {"shf", [](D& d) { return d.Shf(); }},
      {"shfl", [](D& d) { return d.Shfl(); }},
      {"shl", [](D& d) { return d.Arithmetic(Op::kShl, 2); }},
      {"shr", [](D& d) { return d.Arithmetic(Op::kShr, 2); }},
      {"sin", [](D& d) { return d.Arithmetic(Op::kSin, 1); }},
      {"sqrt", [](D& d) { return d.Arithmetic(Op::kSqrt, 1); }},
      {"st", [](D& d) { return d.Memory(Op::kSt); }},
      {"stmatrix", [](D& d) { return d.Matrix(); }},
      {"sub", [](D& d) { return d.Arithmetic(Op::kSub, 2); }},
      {"subc", [](D& d) { return d.Arithmetic(Op::kSub, 2); }},
      {"suld", [](D& d) { return d.Texture(Op::kSuld); }},
      {"sust", [](D& d) { return d.Texture(Op::kSust); }},
      {"tanh", [](D& d) { return d.Arithmetic(Op::kTanh, 1); }},
      {"tex", [](D& d) { return d.Texture(Op::kTex); }},
      {"trap", [](D& d) { return d.Plain(Op::kTrap); }},
      {"vabsdiff2", [](D& d) { return d.NarrowInt(); }},
      {"vabsdiff4", [](D& d) { return d.NarrowInt(); }},
      {"vadd2", [](D& d) { return d.NarrowInt(); }},
      {"vadd4", [](D& d) { return d.NarrowInt(); }},
      {"vavrg2", [](D& d) { return d.NarrowInt(); }},
      {"vavrg4", [](D& d) { return d.NarrowInt(); }},
      {"vmax2", [](D& d) { return d.NarrowInt(); }},
      {"vmax4", [](D& d) { return d.NarrowInt(); }},
      {"vmin2", [](D& d) { return d.NarrowInt(); }},
      {"vmin4", [](D& d) { return d.NarrowInt(); }},
      {"vote", [](D& d) { return d.Vote(); }},
      {"vsub2", [](D& d) { return d.NarrowInt(); }},
      {"vsub4", [](D& d) { return d.NarrowInt(); }},
      {"wmma", [](D& d) { return d.Matrix(); }},
      {"xor", [](D& d) { return d.Arithmetic(Op::kXor, 2); }},
  };
  static_assert(std::ranges::adjacent_find(kOpcodes, std::greater_equal{}, &Opcode::name) ==
                    std::end(kOpcodes),
                "kOpcodes must be sorted by opcode, each once");
  const Opcode* found = std::ranges::lower_bound(kOpcodes, name, {}, &Opcode::name);
  return found != std::end(kOpcodes) && found->name == name ? found : nullptr;
}

absl::StatusOr<Inst> Decoder::Decode() {
  const Opcode* opcode = FindOpcode(in_.opcode);
  if (opcode == nullptr) return Fail("not implemented by the emulator");
  if (opcode->decode == nullptr) {
    inst_.op = Op::kNop;  // a cache hint: nothing to do (and nothing to check) here
    return inst_;
  }
  TALLY_RETURN_IF_ERROR(opcode->decode(*this));
  if (IsHalf(inst_.type) || IsHalf(inst_.type2)) TALLY_RETURN_IF_ERROR(HalfForm());
  TALLY_RETURN_IF_ERROR(mods_.Finish());
  if (inst_.op == Op::kPrmt && inst_.type != Type::kB32) return Fail("prmt needs .b32");
  if (!in_.guard.empty()) {
    ptx::Operand guard = ptx::Operand::Name(in_.guard);
    TALLY_ASSIGN_OR_RETURN(inst_.guard, context_.Source(guard, Type::kPred));
    if (in_.guard_negated) inst_.flags |= kFlagNegateGuard;
  }
  return inst_;
}

}  // namespace internal

absl::Status DecodeInstruction(const ptx::Instruction& instruction, LowerContext& context,
                               std::vector<Inst>& out) {
  // `mov.v4.u32 {a, b, c, d}, %tid;` (PTX ISA, "Special Registers": %tid, %ntid, %ctaid, ... are
  // .v4 .u32 vectors) reads the components one by one: one mov per named destination.
  const auto& operands = instruction.operands;
  if (instruction.opcode == "mov" && operands.size() == 2 &&
      operands[0].kind == ptx::Operand::Kind::kVector &&
      operands[1].kind == ptx::Operand::Kind::kName && operands[1].component == 0 &&
      IsVectorSpecialRegister(operands[1].name) && operands[0].elements.size() <= 4 &&
      (instruction.HasModifier("v2") || instruction.HasModifier("v4"))) {
    constexpr char kComponents[] = {'x', 'y', 'z', 'w'};
    for (size_t i = 0; i < operands[0].elements.size(); ++i) {
      if (operands[0].elements[i].kind == ptx::Operand::Kind::kSink) continue;
      ptx::Instruction component = instruction;
      std::erase_if(component.modifiers,
                    [](const std::string& m) { return m == "v2" || m == "v4"; });
      component.operands = {operands[0].elements[i],
                            ptx::Operand::Name(operands[1].name, kComponents[i])};
      TALLY_RETURN_IF_ERROR(DecodeInstruction(component, context, out));
    }
    return absl::OkStatus();
  }
  internal::Decoder decoder(instruction, context);
  TALLY_ASSIGN_OR_RETURN(Inst inst, decoder.Decode());
  out.push_back(inst);
  return absl::OkStatus();
}

}  // namespace tally::emu::exec
