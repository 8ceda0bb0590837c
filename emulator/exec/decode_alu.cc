// Decoding of data movement, arithmetic, comparison and conversion instructions, and the
// opcode dispatch (Decoder::Decode) with the entry point DecodeInstruction.
#include "emulator/exec/decoder.h"

namespace tally::emu::exec {
namespace internal {

absl::Status Decoder::Arithmetic(Op op, size_t sources) {
  inst_.op = op;
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Carry());
  if (IsFloat(inst_.type)) {
    FloatModes();
    mods_.Take("approx");
    mods_.Take("full");
    if ((op == Op::kMin || op == Op::kMax) && mods_.Take("NaN")) inst_.mod |= kHalfNan;
  } else if (mods_.Take("sat")) {
    if (inst_.type != Type::kS32) return Fail(".sat needs .s32");
    inst_.flags |= kFlagSat;
  }
  std::array<Type, 4> types = {};
  // Shift amounts and bit positions are .u32 whatever the data type (PTX ISA, shl/bfe/bfi).
  if (op == Op::kShl || op == Op::kShr) types = {Type::kNone, Type::kU32};
  if (op == Op::kBfe) types = {Type::kNone, Type::kU32, Type::kU32};
  if (op == Op::kBfi) types = {Type::kNone, Type::kNone, Type::kU32, Type::kU32};
  return Operands(sources, types);
}

absl::Status Decoder::MulMad(Op op) {
  inst_.op = op;
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Carry());
  size_t sources = op == Op::kMul ? 2 : 3;
  if (IsFloat(inst_.type)) {
    FloatModes();
    if (op == Op::kMad) inst_.op = Op::kFma;  // mad.f32/.f64 is fused (PTX ISA, "mad")
    return Operands(sources);
  }
  if (mods_.Take("lo")) {
    inst_.mod = static_cast<uint8_t>(MulMode::kLo);
  } else if (mods_.Take("hi")) {
    inst_.mod = static_cast<uint8_t>(MulMode::kHi);
  } else if (mods_.Take("wide")) {
    inst_.mod = static_cast<uint8_t>(MulMode::kWide);
    if (TypeBits(inst_.type) > 32) return Fail(".wide needs 16- or 32-bit sources");
  } else {
    return Fail("integer mul/mad needs .lo, .hi or .wide");
  }
  if (mods_.Take("sat")) {
    if (inst_.type != Type::kS32 || inst_.mod != static_cast<uint8_t>(MulMode::kHi)) {
      return Fail(".sat needs .hi.s32");
    }
    inst_.flags |= kFlagSat;
  }
  // .wide sources have the operation type; the third mad.wide operand is twice as wide.
  std::array<Type, 4> types = {};
  return Operands(sources, types);
}

absl::Status Decoder::Mov() {
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Arity(2));
  const ptx::Operand& dst = Operand(0);
  const ptx::Operand& src = Operand(1);
  using Kind = ptx::Operand::Kind;
  constexpr std::pair<std::string_view, ClockRead> kClocks[] = {
      {"%clock", ClockRead::kClock},
      {"%clock_hi", ClockRead::kClockHi},
      {"%clock64", ClockRead::kClock64},
      {"%globaltimer_lo", ClockRead::kTimerLo},
      {"%globaltimer_hi", ClockRead::kTimerHi},
      {"%globaltimer", ClockRead::kTimer}};
  for (const auto& [name, read] : kClocks) {
    if (src.kind == Kind::kName && src.component == 0 && src.name == name) {
      inst_.op = Op::kClock;
      inst_.mod = static_cast<uint8_t>(read);
      TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
      return absl::OkStatus();
    }
  }
  if (src.kind == Kind::kVector || dst.kind == Kind::kVector) {
    const ptx::Operand& vector = src.kind == Kind::kVector ? src : dst;
    size_t n = vector.elements.size();
    if ((n != 2 && n != 4) || TypeBits(inst_.type) % n != 0) return Fail("bad vector mov");
    inst_.vec = static_cast<uint8_t>(n);
    if (src.kind == Kind::kVector) {
      inst_.op = Op::kPack;
      TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
      for (size_t i = 0; i < n; ++i) {
        TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(vector.elements[i], Type::kNone));
      }
    } else {
      inst_.op = Op::kUnpack;
      TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(src, inst_.type));
      for (size_t i = 0; i < n; ++i) {
        TALLY_ASSIGN_OR_RETURN(inst_.dst[i], context_.Dest(vector.elements[i]));
      }
    }
    return absl::OkStatus();
  }
  if (auto offset = context_.FrameOffset(src)) {
    // A variable in an out-of-line function's frame: its address is the frame base + offset.
    inst_.op = Op::kAdd;
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
    inst_.src[0] = static_cast<uint32_t>(SpecialSlot::kFrameBase);
    inst_.src[1] = context_.Constant(*offset);
    return absl::OkStatus();
  }
  inst_.op = Op::kMov;
  return Operands(1);
}

// setp.CmpOp[.BoolOp][.ftz].type p[|q], a, b[, {!}c] (PTX ISA, "setp") and
// set.CmpOp[.BoolOp][.ftz].dtype.stype d, a, b[, {!}c] (PTX ISA, "set"), whose result is a mask
// (integer destination) or 1.0 (float destination) per compared value.
absl::Status Decoder::Compare(Op op) {
  inst_.op = op;
  auto cmp = mods_.TakeOne(kCmpOps);
  if (!cmp) return Fail("missing comparison");
  inst_.mod = static_cast<uint8_t>(*cmp);
  constexpr std::pair<std::string_view, BoolOp> kBoolOps[] = {
      {"and", BoolOp::kAnd}, {"or", BoolOp::kOr}, {"xor", BoolOp::kXor}};
  inst_.mod2 = static_cast<uint8_t>(mods_.TakeOne(kBoolOps).value_or(BoolOp::kNone));
  if (mods_.Take("ftz")) inst_.flags |= kFlagFtz;
  TALLY_RETURN_IF_ERROR(NeedType());
  Type compared = inst_.type;
  if (op == Op::kSet) {
    auto source = mods_.TakeType();
    if (!source) return Fail("missing source type");
    compared = inst_.type2 = *source;
    Type d = inst_.type;
    bool valid = d == Type::kU32 || d == Type::kS32 || d == Type::kF32 ||
                 (IsHalf(d) && IsPackedHalf(d) == IsPackedHalf(compared));
    if (!valid || (IsPackedHalf(compared) && !IsPackedHalf(d) && IsFloat(d))) {
      return Fail("unsupported destination type");
    }
  }
  bool combine = inst_.mod2 != static_cast<uint8_t>(BoolOp::kNone);
  TALLY_RETURN_IF_ERROR(Arity(combine ? 4 : 3));
  TALLY_RETURN_IF_ERROR(Destinations(Operand(0)));
  for (size_t i = 0; i < 2; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(i + 1), compared));
  }
  if (combine) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[2], context_.Source(Operand(3), Type::kPred));
    if (Operand(3).negated) inst_.flags |= kFlagNegateSrcB;
  }
  return absl::OkStatus();
}

// cvt[.rnd][.ftz][.sat].dtype.atype d, a; cvt.rnd[.relu][.satfinite].{f16,bf16}{,x2}.f32 d, a[, b]
// (PTX ISA, "cvt"): the x2 forms pack a into the upper and b into the lower half.
absl::Status Decoder::Cvt() {
  inst_.op = Op::kCvt;
  FloatModes();
  if (mods_.Take("relu")) inst_.mod |= kHalfRelu;
  if (mods_.Take("satfinite")) inst_.mod |= kHalfSatfinite;
  TALLY_RETURN_IF_ERROR(NeedType());
  auto source = mods_.TakeType();
  if (!source) return Fail("missing source type");
  inst_.type2 = *source;
  if (inst_.mod != 0 && !IsHalf(inst_.type)) {
    return Fail(".relu and .satfinite need an f16/bf16 destination");
  }
  if (IsPackedHalf(*source)) return Fail("conversions from packed f16x2/bf16x2");
  if (IsHalf(inst_.type) || IsHalf(*source)) inst_.op = Op::kHalfCvt;
  if (IsPackedHalf(inst_.type)) {
    if (*source != Type::kF32) return Fail("packed conversions need .f32 sources");
    return Operands(2, {Type::kF32, Type::kF32});
  }
  return Operands(1, {*source});
}

// f16/bf16 operands (PTX ISA, "Half Precision Floating-Point Instructions"): arithmetic and
// comparisons get their own operations; moves, loads, stores, selects and atomics move bits.
absl::Status Decoder::HalfForm() {
  switch (inst_.op) {
    case Op::kMov:
    case Op::kPack:
    case Op::kUnpack:
    case Op::kLd:
    case Op::kSt:
    case Op::kSelp:
    case Op::kAtom:
    case Op::kSet:
    case Op::kHalfCvt:
      return absl::OkStatus();
    case Op::kSetp:
      inst_.op = Op::kHalfSetp;
      return absl::OkStatus();
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kFma:
    case Op::kMin:
    case Op::kMax:
    case Op::kNeg:
    case Op::kAbs:
    case Op::kEx2:
    case Op::kTanh: {
      auto rounding = static_cast<Rounding>(inst_.mod2);
      if (rounding != Rounding::kDefault && rounding != Rounding::kRn) {
        return Fail("f16/bf16 arithmetic rounds to nearest even only");
      }
      const bool min_max = inst_.op == Op::kMin || inst_.op == Op::kMax;
      uint8_t mode = inst_.mod & kHalfNan;  // taken with the other float modifiers
      if (mods_.Take("relu")) mode |= kHalfRelu;
      if (mods_.Take("xorsign")) {
        if (!mods_.Take("abs")) return Fail(".xorsign without .abs");
        mode |= kHalfXorsignAbs;
      }
      if ((mode & kHalfRelu) != 0 && inst_.op != Op::kFma && !min_max) {
        return Fail(".relu needs fma, min or max");
      }
      if ((mode & (kHalfNan | kHalfXorsignAbs)) != 0 && !min_max) {
        return Fail(".NaN and .xorsign.abs need min or max");
      }
      inst_.mod = static_cast<uint8_t>(inst_.op);
      inst_.mod2 = mode;
      inst_.op = Op::kHalfArith;
      return absl::OkStatus();
    }
    default:
      return Fail("not implemented for f16/bf16 operands");
  }
}

// ld/st[.space][.cache][.vN].type (PTX ISA, "ld", "st").

absl::StatusOr<Inst> Decoder::Decode() {
  const std::string& op = in_.opcode;
  absl::Status status;
  if (op == "mov") {
    status = Mov();
  } else if (op == "addc" || op == "subc") {
    status = Arithmetic(op == "addc" ? Op::kAdd : Op::kSub, 2);
  } else if (op == "add" || op == "sub" || op == "min" || op == "max" || op == "div" ||
             op == "rem" || op == "and" || op == "or" || op == "xor" || op == "shl" ||
             op == "shr") {
    static const std::pair<std::string_view, Op> kBinary[] = {
        {"add", Op::kAdd}, {"sub", Op::kSub}, {"min", Op::kMin}, {"max", Op::kMax},
        {"div", Op::kDiv}, {"rem", Op::kRem}, {"and", Op::kAnd}, {"or", Op::kOr},
        {"xor", Op::kXor}, {"shl", Op::kShl}, {"shr", Op::kShr}};
    for (const auto& [name, value] : kBinary)
      if (op == name) status = Arithmetic(value, 2);
  } else if (op == "abs" || op == "neg" || op == "not" || op == "cnot" || op == "popc" ||
             op == "clz" || op == "brev" || op == "rcp" || op == "sqrt" || op == "rsqrt" ||
             op == "sin" || op == "cos" || op == "ex2" || op == "lg2" || op == "tanh") {
    static const std::pair<std::string_view, Op> kUnary[] = {
        {"abs", Op::kAbs},   {"neg", Op::kNeg},     {"not", Op::kNot},   {"cnot", Op::kCnot},
        {"popc", Op::kPopc}, {"clz", Op::kClz},     {"brev", Op::kBrev}, {"rcp", Op::kRcp},
        {"sqrt", Op::kSqrt}, {"rsqrt", Op::kRsqrt}, {"sin", Op::kSin},   {"cos", Op::kCos},
        {"ex2", Op::kEx2},   {"lg2", Op::kLg2},     {"tanh", Op::kTanh}};
    for (const auto& [name, value] : kUnary)
      if (op == name) status = Arithmetic(value, 1);
  } else if (op == "mul" || op == "mad" || op == "madc") {
    status = MulMad(op == "mul" ? Op::kMul : Op::kMad);
  } else if (op == "fma") {
    status = Arithmetic(Op::kFma, 3);
  } else if (op == "bfe") {
    status = Arithmetic(Op::kBfe, 3);
  } else if (op == "bfi") {
    status = Arithmetic(Op::kBfi, 4);
  } else if (op == "prmt") {
    status = Arithmetic(Op::kPrmt, 3);
  } else if (op == "shf") {
    if (mods_.Take("r")) {
      inst_.mod |= 1;
    } else if (!mods_.Take("l")) {
      return Fail("shf needs .l or .r");
    }
    if (mods_.Take("clamp")) {
      inst_.mod |= 2;
    } else if (!mods_.Take("wrap")) {
      return Fail("shf needs .wrap or .clamp");
    }
    inst_.op = Op::kShf;
    status = NeedType();
    if (status.ok()) status = Operands(3, {Type::kNone, Type::kNone, Type::kU32});
  } else if (op == "lop3") {
    inst_.op = Op::kLop3;
    status = NeedType();
    if (status.ok()) status = Operands(4, {Type::kNone, Type::kNone, Type::kNone, Type::kU32});
  } else if (IsNarrowIntOpcode(op)) {
    status = NarrowInt();
  } else if (op == "sad") {
    status = Arithmetic(Op::kSad, 3);
  } else if (op == "copysign") {
    status = Arithmetic(Op::kCopysign, 2);
  } else if (op == "bfind") {
    if (mods_.Take("shiftamt")) inst_.mod = 1;
    status = Arithmetic(Op::kBfind, 1);
  } else if (op == "isspacep") {
    inst_.op = Op::kIsspacep;
    // .shared::cluster: any CTA's shared memory; .shared(::cta): the executing CTA's.
    if (mods_.Take("shared::cluster")) inst_.mod = 1;
    inst_.space = inst_.mod == 1 ? Space::kShared : mods_.TakeSpace();
    inst_.type = Type::kU64;
    status = inst_.space == Space::kGeneric ? Fail("isspacep needs a state space") : Operands(1);
  } else if (op == "redux") {
    status = Redux();
  } else if (op == "prefetch" || op == "prefetchu") {
    inst_.op = Op::kNop;  // a cache hint: nothing to do (and nothing to check) here
    return inst_;
  } else if (op == "selp") {
    inst_.op = Op::kSelp;
    status = NeedType();
    if (status.ok()) status = Operands(3, {Type::kNone, Type::kNone, Type::kPred});
  } else if (op == "setp" || op == "set") {
    status = Compare(op == "setp" ? Op::kSetp : Op::kSet);
  } else if (op == "cvt") {
    status = Cvt();
  } else if (op == "cvta") {
    inst_.op = Op::kCvta;
    if (!mods_.Take("to")) inst_.flags |= kFlagToGeneric;
    inst_.space = mods_.TakeSpace();
    if (inst_.space == Space::kGeneric || inst_.space == Space::kParam) {
      status = Fail("cvta needs .global, .shared, .local or .const");
    } else {
      status = NeedType();
      if (status.ok()) status = Operands(1);
    }
  } else if (op == "ld" || op == "st") {
    status = Memory(op == "ld" ? Op::kLd : Op::kSt);
  } else if (op == "atom" || op == "red") {
    status = Atom(op == "atom");
  } else if (op == "membar" || op == "fence") {
    inst_.op = Op::kFence;
    for (std::string_view level : {"gl", "proxy", "alias", "async"}) mods_.Take(level);
  } else if (op == "cp") {
    status = CpAsync();
  } else if (op == "mbarrier") {
    status = Mbarrier();
  } else if (op == "tex" || op == "suld" || op == "sust") {
    status = Texture(op == "tex" ? Op::kTex : op == "suld" ? Op::kSuld : Op::kSust);
  } else if (op == "shfl") {
    status = Shfl();
  } else if (op == "vote") {
    status = Vote();
  } else if (op == "activemask") {
    inst_.op = Op::kActiveMask;
    status = NeedType();
    if (status.ok()) status = Operands(0);
  } else if (op == "bar" || op == "barrier") {
    status = Barrier();
  } else if (op == "bra") {
    inst_.op = Op::kBra;
    status = Arity(1);
    if (status.ok() && Operand(0).kind != ptx::Operand::Kind::kName) {
      status = Fail("bra needs a label");
    }
    if (status.ok()) context_.BranchTo(Operand(0).name);
  } else if (op == "brx") {
    // brx.idx{.uni} index, tlist (PTX ISA, "brx.idx"): tlist names a .branchtargets list.
    inst_.op = Op::kBrx;
    if (!mods_.Take("idx")) return Fail("brx needs .idx");
    status = Arity(2);
    if (status.ok() && Operand(1).kind != ptx::Operand::Kind::kName) {
      status = Fail("the target list must be a .branchtargets label");
    }
    if (status.ok()) {
      auto index = context_.Source(Operand(0), Type::kU32);
      status = index.status();
      if (status.ok()) inst_.src[0] = *index;
      context_.IndexedBranchTo(Operand(1).name);
    }
  } else if (op == "mapa" || op == "getctarank") {
    status = Mapa(op == "getctarank");
  } else if (op == "match") {
    status = Match();
  } else if (op == "wmma" || op == "mma" || op == "ldmatrix" || op == "stmatrix" ||
             op == "movmatrix") {
    status = Matrix();
  } else if (op == "ret" && context_.ReturnsFrom()) {
    inst_.op = Op::kRet;
    inst_.target = *context_.ReturnsFrom();
  } else if (op == "ret" && context_.in_call()) {
    inst_.op = Op::kBra;  // to the end of the inlined callee
    context_.ReturnFromCall();
  } else if (op == "ret" || op == "exit") {
    inst_.op = Op::kExit;
  } else if (op == "trap" || op == "brkpt") {
    inst_.op = Op::kTrap;
  } else if (op == "nanosleep" || op == "pmevent") {
    inst_.op = Op::kNop;
    mods_.TakeType();  // nanosleep.u32 t: a hint; spinning warps yield after a time slice anyway
  } else {
    return Fail("not implemented by the emulator");
  }
  TALLY_RETURN_IF_ERROR(status);
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
