// Decoding of memory, warp-collective and barrier instructions.
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {

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
      {"add", AtomOp::kAdd}, {"min", AtomOp::kMin},   {"max", AtomOp::kMax}, {"inc", AtomOp::kInc},
      {"dec", AtomOp::kDec}, {"exch", AtomOp::kExch}, {"cas", AtomOp::kCas}, {"and", AtomOp::kAnd},
      {"or", AtomOp::kOr},   {"xor", AtomOp::kXor},
  };
  auto atom_op = mods_.TakeOne(kAtomOps);
  if (!atom_op) return Fail("missing atomic operation");
  inst_.mod = static_cast<uint8_t>(*atom_op);
  TALLY_RETURN_IF_ERROR(NeedType());
  // 16-bit atomics exist only as cas.b16 (sm_70+) and f16/bf16 adds (PTX ISA, "atom").
  bool cas16 = *atom_op == AtomOp::kCas && TypeBits(inst_.type) == 16;
  bool half_add = *atom_op == AtomOp::kAdd && IsHalf(inst_.type);
  if (TypeBits(inst_.type) < 32 && !cas16 && !half_add) return Fail("sub-word atomics");
  if (IsHalf(inst_.type) && !half_add) return Fail("f16/bf16 atomics other than add");
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
  constexpr std::pair<std::string_view, ShflMode> kModes[] = {{"up", ShflMode::kUp},
                                                              {"down", ShflMode::kDown},
                                                              {"bfly", ShflMode::kBfly},
                                                              {"idx", ShflMode::kIdx}};
  auto mode = mods_.TakeOne(kModes);
  if (!mode) return Fail("missing shuffle mode");
  inst_.mod = static_cast<uint8_t>(*mode);
  TALLY_RETURN_IF_ERROR(NeedType());
  TALLY_RETURN_IF_ERROR(Arity(5));
  TALLY_RETURN_IF_ERROR(Destinations(Operand(0)));
  for (size_t i = 0; i < 4; ++i) {
    TALLY_ASSIGN_OR_RETURN(inst_.src[i], context_.Source(Operand(i + 1), Type::kU32));
  }
  return absl::OkStatus();
}

// vote.sync.{all,any,uni}.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a, membermask.
absl::Status Decoder::Vote() {
  inst_.op = Op::kVote;
  if (!mods_.Take("sync")) return Fail("only vote.sync is implemented");
  constexpr std::pair<std::string_view, VoteMode> kModes[] = {{"all", VoteMode::kAll},
                                                              {"any", VoteMode::kAny},
                                                              {"uni", VoteMode::kUni},
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

// match.any.sync.type d, a, membermask; match.all.sync.type d[|p], a, membermask with .b32 or
// .b64 (PTX ISA, "match.sync").
absl::Status Decoder::Match() {
  inst_.op = Op::kMatch;
  if (!mods_.Take("sync")) return Fail("only match.sync exists");
  if (mods_.Take("all")) {
    inst_.mod = 1;
  } else if (!mods_.Take("any")) {
    return Fail("match needs .any or .all");
  }
  TALLY_RETURN_IF_ERROR(NeedType());
  if (inst_.type != Type::kB32 && inst_.type != Type::kB64) return Fail("match needs .b32 or .b64");
  TALLY_RETURN_IF_ERROR(Arity(3));
  TALLY_RETURN_IF_ERROR(Destinations(Operand(0)));
  if (inst_.mod == 0 && inst_.dst[1] != kNoSlot) return Fail("match.any has no predicate result");
  TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(1), inst_.type));
  TALLY_ASSIGN_OR_RETURN(inst_.src[1], context_.Source(Operand(2), Type::kU32));
  return absl::OkStatus();
}

// bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b; bar.warp.sync mask.
absl::Status Decoder::Barrier() {
  if (mods_.Take("cluster")) return ClusterBarrier();
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

}  // namespace tally::emu::exec::internal
