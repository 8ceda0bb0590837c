// The instruction decoder shared by the decode_*.cc files: modifier bookkeeping (Mods) and one
// Decoder per PTX instruction. Every modifier must be understood or explicitly harmless (cache
// and scope hints); anything else is refused, so an instruction the interpreter does not
// implement exactly fails the module load instead of computing something silently wrong.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "emulator/exec/lower_context.h"

namespace tally::emu::exec::internal {

struct NamedType {
  std::string_view name;
  Type type;
};
inline constexpr NamedType kTypes[] = {
    {"pred", Type::kPred}, {"b8", Type::kB8},       {"b16", Type::kB16},       {"b32", Type::kB32},
    {"b64", Type::kB64},   {"u8", Type::kU8},       {"u16", Type::kU16},       {"u32", Type::kU32},
    {"u64", Type::kU64},   {"s8", Type::kS8},       {"s16", Type::kS16},       {"s32", Type::kS32},
    {"s64", Type::kS64},   {"f16", Type::kF16},     {"f32", Type::kF32},       {"f64", Type::kF64},
    {"bf16", Type::kBF16}, {"f16x2", Type::kF16x2}, {"bf16x2", Type::kBF16x2},
};

inline constexpr std::pair<std::string_view, CmpOp> kCmpOps[] = {
    {"eq", CmpOp::kEq},   {"ne", CmpOp::kNe},   {"lt", CmpOp::kLt},   {"le", CmpOp::kLe},
    {"gt", CmpOp::kGt},   {"ge", CmpOp::kGe},   {"lo", CmpOp::kLo},   {"ls", CmpOp::kLs},
    {"hi", CmpOp::kHi},   {"hs", CmpOp::kHs},   {"equ", CmpOp::kEqu}, {"neu", CmpOp::kNeu},
    {"ltu", CmpOp::kLtu}, {"leu", CmpOp::kLeu}, {"gtu", CmpOp::kGtu}, {"geu", CmpOp::kGeu},
    {"num", CmpOp::kNum}, {"nan", CmpOp::kNan},
};

inline constexpr std::pair<std::string_view, Rounding> kRoundings[] = {
    {"rn", Rounding::kRn},   {"rz", Rounding::kRz},   {"rm", Rounding::kRm},
    {"rp", Rounding::kRp},   {"rni", Rounding::kRni}, {"rzi", Rounding::kRzi},
    {"rmi", Rounding::kRmi}, {"rpi", Rounding::kRpi},
};

inline constexpr std::pair<std::string_view, Space> kSpaces[] = {
    {"global", Space::kGlobal}, {"shared", Space::kShared}, {"shared::cta", Space::kShared},
    {"local", Space::kLocal},   {"param", Space::kParam},   {"const", Space::kConst},
    // Shared addresses of other CTAs of the cluster are told apart by their value (program.h).
    {"shared::cluster", Space::kShared},
};

// Modifiers that change nothing in a sequentially consistent emulator: cache operators and
// eviction hints, memory-ordering semantics and scopes (every access is already visible
// in order; the CTAs of a cluster run on one host thread), `.uni`, `.sync`/`.aligned` on warp
// operations that run converged anyway.
inline bool IsHarmless(std::string_view m) {
  constexpr std::string_view kHarmless[] = {
      "uni", "sync", "aligned", "nc",  "volatile", "relaxed", "acquire", "release", "acq_rel",
      "sc",  "weak", "cta",     "gpu", "sys",      "cluster", "ca",      "cg",      "cs",
      "lu",  "cv",   "wb",      "wt",  "mmio",     "noftz",
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

class MatrixDecoder;  // decode_matrix.cc

class Decoder {
 public:
  Decoder(const ptx::Instruction& instruction, LowerContext& context)
      : in_(instruction), mods_(instruction), context_(context) {
    inst_.line = instruction.location.line;
  }

  absl::StatusOr<Inst> Decode();

 private:
  friend class MatrixDecoder;
  // A PTX opcode and the member that decodes it (decode.cc's table); no decoder: a hint that
  // becomes a nop with nothing checked.
  struct Opcode {
    std::string_view name;
    absl::Status (*decode)(Decoder& decoder);
  };
  static const Opcode* FindOpcode(std::string_view name);

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
  // `d` or `d|p` (setp's and shfl's two destinations, PTX ISA "setp", "shfl.sync").
  absl::Status Destinations(const ptx::Operand& dst) {
    if (dst.kind == ptx::Operand::Kind::kPair) {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst.elements.at(0)));
      TALLY_ASSIGN_OR_RETURN(inst_.dst[1], context_.Dest(dst.elements.at(1)));
    } else {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(dst));
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

  // The operation `op` of the instruction's type with `sources` operands typed as in Operands.
  absl::Status Typed(Op op, size_t sources, std::array<Type, 4> types = {});
  absl::Status Plain(Op op);  // an operation without operands or modifiers
  absl::Status Arithmetic(Op op, size_t sources);
  absl::Status MulMad(Op op);
  absl::Status Mov();
  absl::Status Compare(Op op);
  absl::Status Cvt();
  absl::Status Cvta();
  absl::Status Isspacep();
  absl::Status Bfind();
  absl::Status Shf();
  absl::Status Lop3();
  absl::Status Selp();
  absl::Status HalfForm();
  absl::Status Memory(Op op);
  absl::Status Atom(bool has_result);
  absl::Status Shfl();
  absl::Status Vote();
  absl::Status Barrier();
  absl::Status BarrierReduction();
  absl::Status ClusterBarrier();    // decode_cluster.cc
  absl::Status Mapa(bool rank_of);  // mapa, getctarank (decode_cluster.cc)
  absl::Status Redux();
  absl::Status CpAsync();
  absl::Status Mbarrier();
  absl::Status Texture(Op op);
  absl::Status Match();
  absl::Status NarrowInt();
  absl::Status Matrix();  // wmma, mma, ldmatrix, stmatrix, movmatrix (decode_matrix.cc)
  absl::Status Bra();     // decode_control.cc
  absl::Status Brx();
  absl::Status Ret();
  absl::Status Fence();
  absl::Status Nop();  // nanosleep, pmevent

  const ptx::Instruction& in_;
  Mods mods_;
  LowerContext& context_;
  Inst inst_;
};

}  // namespace tally::emu::exec::internal
