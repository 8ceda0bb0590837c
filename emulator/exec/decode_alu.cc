// Decoding of data movement, arithmetic, logic, comparison and conversion instructions (the
// opcode table in decode.cc names the member that decodes each opcode).
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

absl::Status Decoder::Typed(Op op, size_t sources, std::array<Type, 4> types) {
  inst_.op = op;
  TALLY_RETURN_IF_ERROR(NeedType());
  return Operands(sources, types);
}

// bfind[.shiftamt].type d, a (PTX ISA, "bfind").
absl::Status Decoder::Bfind() {
  if (mods_.Take("shiftamt")) inst_.mod = 1;
  return Arithmetic(Op::kBfind, 1);
}

// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c (PTX ISA, "shf").
absl::Status Decoder::Shf() {
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
  return Typed(Op::kShf, 3, {Type::kNone, Type::kNone, Type::kU32});
}

// lop3.b32 d, a, b, c, immLut (PTX ISA, "lop3").
absl::Status Decoder::Lop3() {
  return Typed(Op::kLop3, 4, {Type::kNone, Type::kNone, Type::kNone, Type::kU32});
}

// selp.type d, a, b, c (PTX ISA, "selp"): c is a predicate.
absl::Status Decoder::Selp() {
  return Typed(Op::kSelp, 3, {Type::kNone, Type::kNone, Type::kPred});
}

// isspacep.space p, a (PTX ISA, "isspacep").
absl::Status Decoder::Isspacep() {
  inst_.op = Op::kIsspacep;
  // .shared::cluster: any CTA's shared memory; .shared(::cta): the executing CTA's.
  if (mods_.Take("shared::cluster")) inst_.mod = 1;
  inst_.space = inst_.mod == 1 ? Space::kShared : mods_.TakeSpace();
  inst_.type = Type::kU64;
  return inst_.space == Space::kGeneric ? Fail("isspacep needs a state space") : Operands(1);
}

// cvta[.to].space.size d, a (PTX ISA, "cvta").
absl::Status Decoder::Cvta() {
  if (!mods_.Take("to")) inst_.flags |= kFlagToGeneric;
  inst_.space = mods_.TakeSpace();
  if (inst_.space == Space::kGeneric || inst_.space == Space::kParam) {
    return Fail("cvta needs .global, .shared, .local or .const");
  }
  return Typed(Op::kCvta, 1);
}

}  // namespace internal
}  // namespace tally::emu::exec
