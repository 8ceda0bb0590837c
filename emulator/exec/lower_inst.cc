// Instruction decoding: PTX opcode + modifiers + operands -> one Inst. Every modifier must be
// understood or explicitly harmless (cache and scope hints); anything else is refused, so an
// instruction the interpreter does not implement exactly fails the module load instead of
// computing something silently wrong.
#include <array>
#include <optional>
#include <string_view>

#include "common/status.h"
#include "emulator/exec/lower_context.h"

namespace tally::emu::exec {
namespace {

struct NamedType {
  std::string_view name;
  Type type;
};
constexpr NamedType kTypes[] = {
    {"pred", Type::kPred}, {"b8", Type::kB8},   {"b16", Type::kB16}, {"b32", Type::kB32},
    {"b64", Type::kB64},   {"u8", Type::kU8},   {"u16", Type::kU16}, {"u32", Type::kU32},
    {"u64", Type::kU64},   {"s8", Type::kS8},   {"s16", Type::kS16}, {"s32", Type::kS32},
    {"s64", Type::kS64},   {"f16", Type::kF16}, {"f32", Type::kF32}, {"f64", Type::kF64},
};

constexpr std::pair<std::string_view, CmpOp> kCmpOps[] = {
    {"eq", CmpOp::kEq},   {"ne", CmpOp::kNe},   {"lt", CmpOp::kLt},   {"le", CmpOp::kLe},
    {"gt", CmpOp::kGt},   {"ge", CmpOp::kGe},   {"lo", CmpOp::kLo},   {"ls", CmpOp::kLs},
    {"hi", CmpOp::kHi},   {"hs", CmpOp::kHs},   {"equ", CmpOp::kEqu}, {"neu", CmpOp::kNeu},
    {"ltu", CmpOp::kLtu}, {"leu", CmpOp::kLeu}, {"gtu", CmpOp::kGtu}, {"geu", CmpOp::kGeu},
    {"num", CmpOp::kNum}, {"nan", CmpOp::kNan},
};

constexpr std::pair<std::string_view, Rounding> kRoundings[] = {
    {"rn", Rounding::kRn},   {"rz", Rounding::kRz},   {"rm", Rounding::kRm},
    {"rp", Rounding::kRp},   {"rni", Rounding::kRni}, {"rzi", Rounding::kRzi},
    {"rmi", Rounding::kRmi}, {"rpi", Rounding::kRpi},
};

constexpr std::pair<std::string_view, Space> kSpaces[] = {
    {"global", Space::kGlobal}, {"shared", Space::kShared}, {"shared::cta", Space::kShared},
    {"local", Space::kLocal},   {"param", Space::kParam},   {"const", Space::kConst},
};

// Modifiers that change nothing in a sequentially consistent emulator: cache operators and
// eviction hints, memory-ordering semantics and scopes (every access is already visible
// in order), `.uni`, `.sync`/`.aligned` on warp operations that run converged anyway.
bool IsHarmless(std::string_view m) {
  constexpr std::string_view kHarmless[] = {
      "uni",     "sync", "aligned", "nc",  "volatile", "relaxed", "acquire", "release",
      "acq_rel", "sc",   "weak",    "cta", "gpu",      "sys",     "ca",      "cg",
      "cs",      "lu",   "cv",      "wb",  "wt",       "mmio",    "noftz",
  };
  for (std::string_view h : kHarmless)
    if (m == h) return true;
  return m.starts_with("L1::") || m.starts_with("L2::");
}

// The modifiers of one instruction; decoders take what they understand.
class Mods {
 public:
  explicit Mods(const ptx::Instruction& instruction)
      : instruction_(instruction), used_(instruction.modifiers.size(), false) {}

  bool Take(std::string_view name) {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (!used_[i] && instruction_.modifiers[i] == name) return used_[i] = true;
    }
    return false;
  }
  template <typename T, size_t N>
  std::optional<T> TakeOne(const std::pair<std::string_view, T> (&table)[N]) {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (used_[i]) continue;
      for (const auto& [name, value] : table) {
        if (instruction_.modifiers[i] == name) {
          used_[i] = true;
          return value;
        }
      }
    }
    return std::nullopt;
  }
  std::optional<Type> TakeType() {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (used_[i]) continue;
      for (const NamedType& t : kTypes) {
        if (instruction_.modifiers[i] == t.name) {
          used_[i] = true;
          return t.type;
        }
      }
    }
    return std::nullopt;
  }
  Space TakeSpace() { return TakeOne(kSpaces).value_or(Space::kGeneric); }
  uint8_t TakeVector() {
    if (Take("v2")) return 2;
    if (Take("v4")) return 4;
    return 1;
  }
  // Fails on the first modifier nobody took that is not harmless.
  absl::Status Finish() const {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (!used_[i] && !IsHarmless(instruction_.modifiers[i])) {
        return Unsupported(instruction_, "modifier ." + instruction_.modifiers[i]);
      }
    }
    return absl::OkStatus();
  }

 private:
  const ptx::Instruction& instruction_;
  std::vector<bool> used_;
};

class Decoder {
 public:
  Decoder(const ptx::Instruction& instruction, LowerContext& context)
      : in_(instruction), mods_(instruction), context_(context) {
    inst_.line = instruction.location.line;
  }

  absl::StatusOr<Inst> Decode();

 private:
  absl::Status Fail(std::string_view why) const { return Unsupported(in_, why); }
  const ptx::Operand& Operand(size_t i) const { return in_.operands[i]; }
  absl::Status Arity(size_t n) const {
    if (in_.operands.size() != n) return Fail("expected " + std::to_string(n) + " operands");
    return absl::OkStatus();
  }
  absl::Status NeedType() {
    auto type = mods_.TakeType();
    if (!type) return Fail("missing type");
    inst_.type = *type;
    if (inst_.type == Type::kF16) return Fail("f16 arithmetic is not implemented yet");
    return absl::OkStatus();
  }
  // d, a, b, c... with sources of the instruction's type unless `types` says otherwise.
  absl::Status Operands(size_t sources, std::array<Type, 4> types = {}) {
    TALLY_RETURN_IF_ERROR(Arity(sources + 1));
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
    for (size_t i = 0; i < sources; ++i) {
      Type type = types[i] == Type::kNone ? inst_.type : types[i];
      if (Operand(i + 1).negated) return Fail("negated operand");
      TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(i + 1), type));
    }
    return absl::OkStatus();
  }
  void FloatModes() {
    if (mods_.Take("ftz")) inst_.flags |= kFlagFtz;
    if (mods_.Take("sat")) inst_.flags |= kFlagSat;
    inst_.mod2 = static_cast<uint8_t>(mods_.TakeOne(kRoundings).value_or(Rounding::kDefault));
  }

  // Call parameters live in local memory (see LowerContext): a .param access naming one is a
  // local access. Inside an inlined callee only such named accesses are supported.
  absl::Status ParamSpace(const LowerContext::Address& address) {
    if (inst_.space != Space::kParam) return absl::OkStatus();
    if (address.symbol_space == Space::kLocal) {
      inst_.space = Space::kLocal;
    } else if (context_.in_call()) {
      return Fail("a .param access through a register inside a called function");
    }
    return absl::OkStatus();
  }

  // Extended-precision arithmetic (PTX ISA, "Extended-Precision Integer Arithmetic"): addc,
  // subc and madc read the carry flag, .cc writes it; only add, sub and mad have these forms.
  absl::Status Carry() {
    const std::string& op = in_.opcode;
    if (op == "addc" || op == "subc" || op == "madc") inst_.flags |= kFlagCarryIn;
    if (mods_.Take("cc")) inst_.flags |= kFlagCarryOut;
    if ((inst_.flags & (kFlagCarryIn | kFlagCarryOut)) == 0) return absl::OkStatus();
    bool add_sub_mad = inst_.op == Op::kAdd || inst_.op == Op::kSub || inst_.op == Op::kMad;
    if (!add_sub_mad || IsFloat(inst_.type) || TypeBits(inst_.type) < 32) {
      return Fail("carry arithmetic needs add/sub/mad on 32- or 64-bit integers");
    }
    return absl::OkStatus();
  }

  absl::Status Arithmetic(Op op, size_t sources);
  absl::Status MulMad(Op op);
  absl::Status Mov();
  absl::Status Setp();
  absl::Status Cvt();
  absl::Status Memory(Op op);
  absl::Status Atom(bool has_result);
  absl::Status Shfl();
  absl::Status Vote();
  absl::Status Barrier();
  absl::Status BarrierReduction();
  absl::Status Redux();

  const ptx::Instruction& in_;
  Mods mods_;
  LowerContext& context_;
  Inst inst_;
};

absl::Status Decoder::Arithmetic(Op op, size_t sources) {
  inst_.op = op;
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Carry());
  if (IsFloat(inst_.type)) {
    FloatModes();
    mods_.Take("approx");
    mods_.Take("full");
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
  if (src.kind == Kind::kName && (src.name == "%clock" || src.name == "%clock64" ||
                                  src.name == "%globaltimer")) {
    inst_.op = Op::kClock;
    inst_.mod = src.name == "%clock" ? 0 : src.name == "%clock64" ? 1 : 2;
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
    return absl::OkStatus();
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
  inst_.op = Op::kMov;
  return Operands(1);
}

// setp.CmpOp[.BoolOp].type p[|q], a, b[, {!}c] (PTX ISA, "setp").
absl::Status Decoder::Setp() {
  inst_.op = Op::kSetp;
  auto cmp = mods_.TakeOne(kCmpOps);
  if (!cmp) return Fail("missing comparison");
  inst_.mod = static_cast<uint8_t>(*cmp);
  constexpr std::pair<std::string_view, BoolOp> kBoolOps[] = {
      {"and", BoolOp::kAnd}, {"or", BoolOp::kOr}, {"xor", BoolOp::kXor}};
  inst_.mod2 = static_cast<uint8_t>(mods_.TakeOne(kBoolOps).value_or(BoolOp::kNone));
  if (mods_.Take("ftz")) inst_.flags |= kFlagFtz;
  TALLY_RETURN_IF_ERROR(NeedType());
  bool combine = inst_.mod2 != static_cast<uint8_t>(BoolOp::kNone);
  TALLY_RETURN_IF_ERROR(Arity(combine ? 4 : 3));
  const ptx::Operand& dst = Operand(0);
  if (dst.kind == ptx::Operand::Kind::kPair) {
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst.elements.at(0)));
    TALLY_ASSIGN_OR_RETURN(inst_.dst[1], context_.Dest(dst.elements.at(1)));
  } else {
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
  }
  for (size_t i = 0; i < 2; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(i + 1), inst_.type));
  }
  if (combine) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[2], context_.Source(Operand(3), Type::kPred));
    if (Operand(3).negated) inst_.flags |= kFlagNegateSrcB;
  }
  return absl::OkStatus();
}

// cvt[.rnd][.ftz][.sat].dtype.atype d, a (PTX ISA, "cvt").
absl::Status Decoder::Cvt() {
  inst_.op = Op::kCvt;
  FloatModes();
  TALLY_RETURN_IF_ERROR(NeedType());
  auto source = mods_.TakeType();
  if (!source) return Fail("missing source type");
  if (*source == Type::kF16) return Fail("f16 conversions are not implemented yet");
  inst_.type2 = *source;
  return Operands(1, {*source});
}

// ld/st[.space][.cache][.vN].type (PTX ISA, "ld", "st").
absl::Status Decoder::Memory(Op op) {
  inst_.op = op;
  inst_.space = mods_.TakeSpace();
  inst_.vec = mods_.TakeVector();
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Arity(2));
  const ptx::Operand& value = Operand(op == Op::kLd ? 0 : 1);
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address address,
                         context_.AddressOf(Operand(op == Op::kLd ? 1 : 0)));
  inst_.address = address.base;
  inst_.offset = address.offset;
  TALLY_RETURN_IF_ERROR(ParamSpace(address));
  bool is_vector = value.kind == ptx::Operand::Kind::kVector;
  if (is_vector != (inst_.vec > 1) || (is_vector && value.elements.size() != inst_.vec)) {
    return Fail("vector width and operand do not match");
  }
  for (uint8_t i = 0; i < inst_.vec; ++i) {
    const ptx::Operand& element = is_vector ? value.elements[i] : value;
    if (op == Op::kLd) {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[i], context_.Dest(element));
    } else {
      TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(element, inst_.type));
    }
  }
  return absl::OkStatus();
}

// atom[.space].op.type d, [a], b[, c] and red[.space].op.type [a], b (PTX ISA, "atom", "red").
absl::Status Decoder::Atom(bool has_result) {
  inst_.op = Op::kAtom;
  if (has_result) inst_.flags |= kFlagHasResult;
  inst_.space = mods_.TakeSpace();
  constexpr std::pair<std::string_view, AtomOp> kAtomOps[] = {
      {"add", AtomOp::kAdd},   {"min", AtomOp::kMin}, {"max", AtomOp::kMax},
      {"inc", AtomOp::kInc},   {"dec", AtomOp::kDec}, {"exch", AtomOp::kExch},
      {"cas", AtomOp::kCas},   {"and", AtomOp::kAnd}, {"or", AtomOp::kOr},
      {"xor", AtomOp::kXor},
  };
  auto atom_op = mods_.TakeOne(kAtomOps);
  if (!atom_op) return Fail("missing atomic operation");
  inst_.mod = static_cast<uint8_t>(*atom_op);
  TALLY_RETURN_IF_ERROR(NeedType());
  if (TypeBits(inst_.type) < 32) return Fail("sub-word atomics");
  size_t sources = *atom_op == AtomOp::kCas ? 2 : 1;
  size_t first = has_result ? 1 : 0;
  TALLY_RETURN_IF_ERROR(Arity(first + 1 + sources));
  if (has_result) {
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
  }
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address address, context_.AddressOf(Operand(first)));
  inst_.address = address.base;
  inst_.offset = address.offset;
  TALLY_RETURN_IF_ERROR(ParamSpace(address));
  for (size_t i = 0; i < sources; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(first + 1 + i), inst_.type));
  }
  return absl::OkStatus();
}

// shfl.sync.mode.b32 d[|p], a, b, c, membermask (PTX ISA, "shfl.sync").
absl::Status Decoder::Shfl() {
  inst_.op = Op::kShfl;
  if (!mods_.Take("sync")) return Fail("only shfl.sync is implemented");
  constexpr std::pair<std::string_view, ShflMode> kModes[] = {
      {"up", ShflMode::kUp}, {"down", ShflMode::kDown}, {"bfly", ShflMode::kBfly},
      {"idx", ShflMode::kIdx}};
  auto mode = mods_.TakeOne(kModes);
  if (!mode) return Fail("missing shuffle mode");
  inst_.mod = static_cast<uint8_t>(*mode);
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Arity(5));
  const ptx::Operand& dst = Operand(0);
  if (dst.kind == ptx::Operand::Kind::kPair) {
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst.elements.at(0)));
    TALLY_ASSIGN_OR_RETURN(inst_.dst[1], context_.Dest(dst.elements.at(1)));
  } else {
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
  }
  for (size_t i = 0; i < 4; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(i + 1), Type::kU32));
  }
  return absl::OkStatus();
}

// vote.sync.{all,any,uni}.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a, membermask.
absl::Status Decoder::Vote() {
  inst_.op = Op::kVote;
  if (!mods_.Take("sync")) return Fail("only vote.sync is implemented");
  constexpr std::pair<std::string_view, VoteMode> kModes[] = {
      {"all", VoteMode::kAll}, {"any", VoteMode::kAny}, {"uni", VoteMode::kUni},
      {"ballot", VoteMode::kBallot}};
  auto mode = mods_.TakeOne(kModes);
  if (!mode) return Fail("missing vote mode");
  inst_.mod = static_cast<uint8_t>(*mode);
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Arity(3));
  TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
  TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(1), Type::kPred));
  if (Operand(1).negated) inst_.flags |= kFlagNegateSrcB;
  TALLY_ASSIGN_OR_RETURN(inst_.src[1], context_.Source(Operand(2), Type::kU32));
  return absl::OkStatus();
}

// redux.sync.op.type d, a, membermask (PTX ISA, "redux.sync"): add/min/max on .u32/.s32,
// and/or/xor on .b32.
absl::Status Decoder::Redux() {
  inst_.op = Op::kRedux;
  if (!mods_.Take("sync")) return Fail("only redux.sync exists");
  constexpr std::pair<std::string_view, AtomOp> kOps[] = {
      {"add", AtomOp::kAdd}, {"min", AtomOp::kMin}, {"max", AtomOp::kMax},
      {"and", AtomOp::kAnd}, {"or", AtomOp::kOr},   {"xor", AtomOp::kXor}};
  auto redux_op = mods_.TakeOne(kOps);
  if (!redux_op) return Fail("missing reduction operation");
  inst_.mod = static_cast<uint8_t>(*redux_op);
  TALLY_RETURN_IF_ERROR(NeedType());
  if (TypeBits(inst_.type) != 32 || IsFloat(inst_.type)) return Fail("redux needs 32-bit integers");
  return Operands(2, {Type::kNone, Type::kU32});
}

// bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b; bar.warp.sync mask.
absl::Status Decoder::Barrier() {
  mods_.Take("cta");
  if (mods_.Take("warp")) {
    // With min-PC scheduling the named lanes are already converged at this point.
    if (!mods_.Take("sync")) return Fail("bar.warp without .sync");
    inst_.op = Op::kNop;
    return absl::OkStatus();
  }
  if (mods_.Take("red")) return BarrierReduction();
  if (mods_.Take("sync")) {
    inst_.op = Op::kBarSync;
  } else if (mods_.Take("arrive")) {
    inst_.op = Op::kBarArrive;
  } else {
    return Fail("only bar.sync, bar.red, barrier.sync and bar.arrive are implemented");
  }
  if (in_.operands.empty() || in_.operands.size() > 2) return Fail("bad barrier operands");
  TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(0), Type::kU32));
  if (in_.operands.size() == 2) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[1], context_.Source(Operand(1), Type::kU32));
  } else if (inst_.op == Op::kBarArrive) {
    return Fail("bar.arrive needs a thread count");
  }
  return absl::OkStatus();
}

// bar.red.popc.u32 d, a{, b}, {!}c and bar.red.{and,or}.pred p, a{, b}, {!}c: a barrier that
// also reduces c over the participating threads (PTX ISA, "bar.red").
absl::Status Decoder::BarrierReduction() {
  inst_.op = Op::kBarRed;
  if (mods_.Take("popc")) {
    inst_.mod = static_cast<uint8_t>(BarRedMode::kPopc);
  } else if (mods_.Take("and")) {
    inst_.mod = static_cast<uint8_t>(BarRedMode::kAnd);
  } else if (mods_.Take("or")) {
    inst_.mod = static_cast<uint8_t>(BarRedMode::kOr);
  } else {
    return Fail("missing reduction");
  }
  TALLY_RETURN_IF_ERROR(NeedType());
  if (in_.operands.size() != 3 && in_.operands.size() != 4) return Fail("bad bar.red operands");
  TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
  TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(1), Type::kU32));
  if (in_.operands.size() == 4) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[1], context_.Source(Operand(2), Type::kU32));
  }
  const ptx::Operand& predicate = in_.operands.back();
  TALLY_ASSIGN_OR_RETURN(inst_.src[2], context_.Source(predicate, Type::kPred));
  if (predicate.negated) inst_.flags |= kFlagNegateSrcB;
  return absl::OkStatus();
}

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
        {"abs", Op::kAbs},   {"neg", Op::kNeg},     {"not", Op::kNot}, {"cnot", Op::kCnot},
        {"popc", Op::kPopc}, {"clz", Op::kClz},     {"brev", Op::kBrev}, {"rcp", Op::kRcp},
        {"sqrt", Op::kSqrt}, {"rsqrt", Op::kRsqrt}, {"sin", Op::kSin}, {"cos", Op::kCos},
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
  } else if (op == "bfind") {
    if (mods_.Take("shiftamt")) inst_.mod = 1;
    status = Arithmetic(Op::kBfind, 1);
  } else if (op == "isspacep") {
    inst_.op = Op::kIsspacep;
    inst_.space = mods_.TakeSpace();
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
  } else if (op == "setp") {
    status = Setp();
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
      status = Fail("indirect branches (brx.idx) are not implemented yet");
    }
    if (status.ok()) context_.BranchTo(Operand(0).name);
  } else if (op == "ret" && context_.in_call()) {
    inst_.op = Op::kBra;  // to the end of the inlined callee
    context_.ReturnFromCall();
  } else if (op == "ret" || op == "exit") {
    inst_.op = Op::kExit;
  } else if (op == "trap" || op == "brkpt") {
    inst_.op = Op::kTrap;
  } else if (op == "nanosleep" || op == "pmevent") {
    inst_.op = Op::kNop;
  } else {
    return Fail("not implemented by the emulator");
  }
  TALLY_RETURN_IF_ERROR(status);
  TALLY_RETURN_IF_ERROR(mods_.Finish());
  if (inst_.op == Op::kPrmt && inst_.type != Type::kB32) return Fail("prmt needs .b32");
  if (!in_.guard.empty()) {
    ptx::Operand guard = ptx::Operand::Name(in_.guard);
    TALLY_ASSIGN_OR_RETURN(inst_.guard, context_.Source(guard, Type::kPred));
    if (in_.guard_negated) inst_.flags |= kFlagNegateGuard;
  }
  return inst_;
}

}  // namespace

absl::Status DecodeInstruction(const ptx::Instruction& instruction, LowerContext& context,
                               std::vector<Inst>& out) {
  Decoder decoder(instruction, context);
  TALLY_ASSIGN_OR_RETURN(Inst inst, decoder.Decode());
  out.push_back(inst);
  return absl::OkStatus();
}

}  // namespace tally::emu::exec
