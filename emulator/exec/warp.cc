// The interpreter: runs one warp's lanes that share the smallest program counter together
// (per-lane PCs reconverge structured code at its join points and handle arbitrary branches),
// one decoded instruction at a time over all active lanes. No allocation or lookup by name
// happens here; registers are slot-major arrays of 32 lanes.
#include <cfenv>
#include <chrono>
#include <cstring>

#include "emulator/exec/alu.h"
#include "emulator/exec/block.h"

namespace tally::emu::exec {
namespace {

template <typename Fn>
inline void ForLanes(uint32_t mask, Fn fn) {
  if (mask == 0xffffffffu) {
    for (int lane = 0; lane < 32; ++lane) fn(lane);
  } else {
    for (; mask != 0; mask &= mask - 1) fn(std::countr_zero(mask));
  }
}

template <typename Fn>
inline void DispatchInt(Type type, Fn fn) {
  switch (type) {
    case Type::kS8: return fn(int8_t{});
    case Type::kS16: return fn(int16_t{});
    case Type::kS32: return fn(int32_t{});
    case Type::kS64: return fn(int64_t{});
    case Type::kU8: case Type::kB8: return fn(uint8_t{});
    case Type::kU16: case Type::kB16: return fn(uint16_t{});
    case Type::kU64: case Type::kB64: return fn(uint64_t{});
    default: return fn(uint32_t{});
  }
}

template <typename Fn>
inline void DispatchFloat(Type type, Fn fn) {
  if (type == Type::kF64) return fn(double{});
  return fn(float{});
}

template <typename F>
inline F FromBits(uint64_t bits) {
  if constexpr (sizeof(F) == 4) return AsF32(bits); else return AsF64(bits);
}

// Directed rounding for one instruction (.rz/.rm/.rp); .rn is the host default.
class RoundingScope {
 public:
  explicit RoundingScope(uint8_t rounding) {
    int mode = rounding == static_cast<uint8_t>(Rounding::kRz)   ? FE_TOWARDZERO
               : rounding == static_cast<uint8_t>(Rounding::kRm) ? FE_DOWNWARD
               : rounding == static_cast<uint8_t>(Rounding::kRp) ? FE_UPWARD
                                                                  : -1;
    if (mode != -1) {
      saved_ = std::fegetround();
      std::fesetround(mode);
    }
  }
  ~RoundingScope() {
    if (saved_ != -1) std::fesetround(saved_);
  }

 private:
  int saved_ = -1;
};

uint64_t ReverseBits(uint64_t value, int width) {
  uint64_t result = 0;
  for (int i = 0; i < width; ++i) result |= ((value >> i) & 1) << (width - 1 - i);
  return result;
}

int64_t NowNs(bool wall) {
  auto now = wall ? std::chrono::system_clock::now().time_since_epoch()
                  : std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
}

// One atomic read-modify-write on host memory; returns the old value.
template <typename U, typename F>
U AtomicUpdate(U* target, F update) {
  U old = __atomic_load_n(target, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(target, &old, update(old), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_RELAXED)) {
  }
  return old;
}

template <typename U>
uint64_t Atomic(U* target, AtomOp op, Type type, uint64_t b, uint64_t c) {
  const int width = sizeof(U) * 8;
  auto as = [&](U v) { return static_cast<uint64_t>(v); };
  switch (op) {
    case AtomOp::kAdd:
      if (type == Type::kF32 || type == Type::kF64) {
        return as(AtomicUpdate(target, [&](U old) {
          if constexpr (sizeof(U) == 4) return static_cast<U>(Bits(AsF32(old) + AsF32(b)));
          else return static_cast<U>(Bits(AsF64(old) + AsF64(b)));
        }));
      }
      return as(AtomicUpdate(target, [&](U old) { return static_cast<U>(old + b); }));
    case AtomOp::kMin:
    case AtomOp::kMax: {
      bool is_min = op == AtomOp::kMin;
      return as(AtomicUpdate(target, [&](U old) {
        bool less = IsSigned(type) ? ReadSigned(b, width) < ReadSigned(old, width)
                                   : static_cast<U>(b) < old;
        return (less == is_min && static_cast<U>(b) != old) ? static_cast<U>(b) : old;
      }));
    }
    case AtomOp::kInc:  // ((old >= b) ? 0 : old + 1), PTX ISA "atom"
      return as(AtomicUpdate(target, [&](U old) {
        return old >= static_cast<U>(b) ? U{0} : static_cast<U>(old + 1);
      }));
    case AtomOp::kDec:  // ((old == 0) || (old > b)) ? b : old - 1
      return as(AtomicUpdate(target, [&](U old) {
        return (old == 0 || old > static_cast<U>(b)) ? static_cast<U>(b)
                                                     : static_cast<U>(old - 1);
      }));
    case AtomOp::kExch:
      return as(__atomic_exchange_n(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kCas: {
      U expected = static_cast<U>(b);
      __atomic_compare_exchange_n(target, &expected, static_cast<U>(c), false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return as(expected);
    }
    case AtomOp::kAnd:
      return as(__atomic_fetch_and(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kOr:
      return as(__atomic_fetch_or(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
    case AtomOp::kXor:
      return as(__atomic_fetch_xor(target, static_cast<U>(b), __ATOMIC_SEQ_CST));
  }
  return 0;
}

}  // namespace

#define TALLY_R(slot) (warp.regs + static_cast<uint64_t>(slot) * 32)

WarpStatus Block::RunWarp(Warp& warp, uint32_t budget) {
  const Inst* const code = function_->code.data();
  Schedule(warp);
  // Parks the active lanes at `pc` and picks the next group of lanes to run.
  auto reschedule = [&](uint32_t pc) {
    for (uint32_t m = warp.active; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = pc;
    Schedule(warp);
  };
  while (warp.active != 0) {
    if (budget-- == 0) {
      reschedule(warp.cur_pc);
      warp.active = 0;
      return WarpStatus::kYielded;
    }
    const uint32_t pc = warp.cur_pc;
    const Inst& in = code[pc];
    uint32_t mask = warp.active;
    if (in.guard != kNoSlot) {
      const uint64_t* guard = TALLY_R(in.guard);
      const uint64_t want = (in.flags & kFlagNegateGuard) ? 0 : 1;
      uint32_t taken = 0;
      ForLanes(mask, [&](int l) { taken |= static_cast<uint32_t>((guard[l] & 1) == want) << l; });
      mask = taken;
    }
    uint64_t* d = in.dst[0] != kNoSlot ? TALLY_R(in.dst[0]) : nullptr;
    const uint64_t* a = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
    const uint64_t* b = in.src[1] != kNoSlot ? TALLY_R(in.src[1]) : nullptr;
    const uint64_t* c = in.src[2] != kNoSlot ? TALLY_R(in.src[2]) : nullptr;
    const int width = TypeBits(in.type);
    const uint64_t wm = WidthMask(width);
    const bool is_float = IsFloat(in.type);
    const bool ftz = in.flags & kFlagFtz;
    const bool sat = in.flags & kFlagSat;

    // Float result post-processing: .ftz flushes subnormal f32 results, .sat clamps to [0, 1].
    auto fout = [&](auto value) -> uint64_t {
      if constexpr (sizeof(value) == 4) {
        if (ftz) value = Ftz(value);
      }
      if (sat) value = SaturateUnit(value);
      return Bits(value);
    };
    auto fin = [&](auto tag, uint64_t bits) {
      using F = decltype(tag);
      F value = FromBits<F>(bits);
      if constexpr (sizeof(F) == 4) {
        if (ftz) value = Ftz(value);
      }
      return value;
    };
    auto float_unary = [&](auto op) {
      RoundingScope rounding(in.mod2);
      DispatchFloat(in.type, [&](auto t) {
        ForLanes(mask, [&](int l) { d[l] = fout(op(fin(t, a[l]))); });
      });
    };
    auto float_binary = [&](auto op) {
      RoundingScope rounding(in.mod2);
      DispatchFloat(in.type, [&](auto t) {
        ForLanes(mask, [&](int l) { d[l] = fout(op(fin(t, a[l]), fin(t, b[l]))); });
      });
    };
    auto int_binary = [&](auto op) {
      DispatchInt(in.type, [&](auto t) {
        using T = decltype(t);
        using U = std::make_unsigned_t<T>;
        ForLanes(mask, [&](int l) {
          d[l] = static_cast<U>(op(static_cast<T>(a[l]), static_cast<T>(b[l])));
        });
      });
    };

    if (mask != 0 && (in.flags & (kFlagCarryIn | kFlagCarryOut)) != 0) {
      // Extended precision: the operation with carry-in and/or carry-out through CC.CF.
      uint64_t* carry = TALLY_R(SpecialSlot::kCarry);
      const bool carry_in = in.flags & kFlagCarryIn, carry_out = in.flags & kFlagCarryOut;
      const MulMode mode = static_cast<MulMode>(in.mod);
      ForLanes(mask, [&](int l) {
        using U128 = unsigned __int128;
        U128 cin = carry_in ? (carry[l] & 1) : 0;
        U128 result;
        if (in.op == Op::kSub) {
          result = U128(a[l] & wm) - U128(b[l] & wm) - cin;  // borrow shows in bit `width`
        } else {
          U128 x = a[l] & wm, y = b[l] & wm;
          if (in.op == Op::kMad) {
            x = mode == MulMode::kHi ? MulHi(a[l], b[l], in.type) : (a[l] * b[l]) & wm;
            y = c[l] & wm;
          }
          result = x + y + cin;
        }
        d[l] = static_cast<uint64_t>(result) & wm;
        if (carry_out) carry[l] = static_cast<uint64_t>(result >> width) & 1;
      });
    } else if (mask != 0) {
      switch (in.op) {
        case Op::kNop:
          break;
        case Op::kMov:
          ForLanes(mask, [&](int l) { d[l] = a[l] & wm; });
          break;
        case Op::kPack: {
          int piece = width / in.vec;
          ForLanes(mask, [&](int l) {
            uint64_t value = 0;
            for (int i = 0; i < in.vec; ++i) {
              value |= (TALLY_R(in.src[i])[l] & WidthMask(piece)) << (i * piece);
            }
            d[l] = value;
          });
          break;
        }
        case Op::kUnpack: {
          int piece = width / in.vec;
          ForLanes(mask, [&](int l) {
            uint64_t value = a[l];
            for (int i = 0; i < in.vec; ++i) {
              TALLY_R(in.dst[i])[l] = (value >> (i * piece)) & WidthMask(piece);
            }
          });
          break;
        }
        case Op::kAdd:
          if (is_float) {
            float_binary([](auto x, auto y) { return x + y; });
          } else if (sat) {
            ForLanes(mask, [&](int l) {
              int64_t sum = ReadSigned(a[l], 32) + ReadSigned(b[l], 32);
              d[l] = static_cast<uint32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
            });
          } else {
            ForLanes(mask, [&](int l) { d[l] = (a[l] + b[l]) & wm; });
          }
          break;
        case Op::kSub:
          if (is_float) {
            float_binary([](auto x, auto y) { return x - y; });
          } else if (sat) {
            ForLanes(mask, [&](int l) {
              int64_t diff = ReadSigned(a[l], 32) - ReadSigned(b[l], 32);
              d[l] = static_cast<uint32_t>(std::clamp<int64_t>(diff, INT32_MIN, INT32_MAX));
            });
          } else {
            ForLanes(mask, [&](int l) { d[l] = (a[l] - b[l]) & wm; });
          }
          break;
        case Op::kMul:
        case Op::kMad: {
          if (is_float) {  // mul only: float mad was lowered to fma
            float_binary([](auto x, auto y) { return x * y; });
            break;
          }
          const bool mad = in.op == Op::kMad;
          const MulMode mode = static_cast<MulMode>(in.mod);
          ForLanes(mask, [&](int l) {
            uint64_t addend = mad ? c[l] : 0;
            if (mode == MulMode::kLo) {
              d[l] = (a[l] * b[l] + addend) & wm;
            } else if (mode == MulMode::kWide) {
              d[l] = (MulWide(a[l], b[l], in.type) + addend) & WidthMask(2 * width);
            } else if (sat) {
              int64_t sum = ReadSigned(MulHi(a[l], b[l], in.type), 32) + ReadSigned(addend, 32);
              d[l] = static_cast<uint32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
            } else {
              d[l] = (MulHi(a[l], b[l], in.type) + addend) & wm;
            }
          });
          break;
        }
        case Op::kFma: {
          RoundingScope rounding(in.mod2);
          DispatchFloat(in.type, [&](auto t) {
            ForLanes(mask, [&](int l) {
              d[l] = fout(std::fma(fin(t, a[l]), fin(t, b[l]), fin(t, c[l])));
            });
          });
          break;
        }
        case Op::kDiv:
          if (is_float) {
            float_binary([](auto x, auto y) { return x / y; });
          } else {
            int_binary([](auto x, auto y) { return IntDiv(x, y); });
          }
          break;
        case Op::kRem:
          int_binary([](auto x, auto y) { return IntRem(x, y); });
          break;
        case Op::kMin:
        case Op::kMax: {
          const bool is_min = in.op == Op::kMin;
          if (is_float) {
            float_binary([&](auto x, auto y) { return is_min ? std::fmin(x, y) : std::fmax(x, y); });
          } else {
            int_binary([&](auto x, auto y) { return is_min ? std::min(x, y) : std::max(x, y); });
          }
          break;
        }
        case Op::kAbs:
        case Op::kNeg: {
          const bool neg = in.op == Op::kNeg;
          if (is_float) {
            // Sign-bit operations, so that NaN and -0 behave as on the GPU.
            uint64_t sign = 1ull << (width - 1);
            ForLanes(mask, [&](int l) {
              uint64_t value = a[l] & wm;
              if (ftz && width == 32) value = Bits(Ftz(AsF32(value)));
              d[l] = neg ? value ^ sign : value & ~sign;
            });
          } else {
            ForLanes(mask, [&](int l) {
              int64_t value = ReadSigned(a[l], width);
              d[l] = static_cast<uint64_t>(neg ? -value : (value < 0 ? -value : value)) & wm;
            });
          }
          break;
        }
        case Op::kAnd:
          ForLanes(mask, [&](int l) { d[l] = a[l] & b[l] & wm; });
          break;
        case Op::kOr:
          ForLanes(mask, [&](int l) { d[l] = (a[l] | b[l]) & wm; });
          break;
        case Op::kXor:
          ForLanes(mask, [&](int l) { d[l] = (a[l] ^ b[l]) & wm; });
          break;
        case Op::kNot:
          ForLanes(mask, [&](int l) { d[l] = ~a[l] & wm; });
          break;
        case Op::kCnot:
          ForLanes(mask, [&](int l) { d[l] = (a[l] & wm) == 0 ? 1 : 0; });
          break;
        case Op::kShl:
          ForLanes(mask, [&](int l) {
            uint64_t n = b[l] & 0xffffffffu;
            d[l] = n >= static_cast<uint64_t>(width) ? 0 : (a[l] << n) & wm;
          });
          break;
        case Op::kShr: {
          const bool arithmetic = IsSigned(in.type);
          ForLanes(mask, [&](int l) {
            uint64_t n = std::min<uint64_t>(b[l] & 0xffffffffu, width);
            if (arithmetic) {
              d[l] = static_cast<uint64_t>(ReadSigned(a[l], width) >> std::min<uint64_t>(n, 63)) & wm;
            } else {
              d[l] = n >= static_cast<uint64_t>(width) ? 0 : (a[l] & wm) >> n;
            }
          });
          break;
        }
        case Op::kPopc:
          ForLanes(mask, [&](int l) { d[l] = std::popcount(a[l] & wm); });
          break;
        case Op::kClz:
          ForLanes(mask, [&](int l) { d[l] = width - std::bit_width(a[l] & wm); });
          break;
        case Op::kBrev:
          ForLanes(mask, [&](int l) { d[l] = ReverseBits(a[l], width); });
          break;
        case Op::kBfe:
          ForLanes(mask, [&](int l) {
            d[l] = BitFieldExtract(a[l], static_cast<uint32_t>(b[l]), static_cast<uint32_t>(c[l]),
                                   in.type);
          });
          break;
        case Op::kBfi: {
          const uint64_t* e = TALLY_R(in.src[3]);
          ForLanes(mask, [&](int l) {
            d[l] = BitFieldInsert(a[l], b[l], static_cast<uint32_t>(c[l]),
                                  static_cast<uint32_t>(e[l]), width);
          });
          break;
        }
        case Op::kPrmt:
          ForLanes(mask, [&](int l) { d[l] = Permute(a[l], b[l], c[l]); });
          break;
        case Op::kSelp:
          ForLanes(mask, [&](int l) { d[l] = (c[l] & 1) ? a[l] & wm : b[l] & wm; });
          break;
        case Op::kSetp: {
          const CmpOp cmp = static_cast<CmpOp>(in.mod);
          const BoolOp bop = static_cast<BoolOp>(in.mod2);
          const uint64_t negate_c = (in.flags & kFlagNegateSrcB) ? 1 : 0;
          uint64_t* q = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
          ForLanes(mask, [&](int l) {
            bool result;
            if (is_float) {
              result = in.type == Type::kF64
                           ? CompareFloat(cmp, AsF64(a[l]), AsF64(b[l]))
                           : CompareFloat(cmp, ftz ? Ftz(AsF32(a[l])) : AsF32(a[l]),
                                          ftz ? Ftz(AsF32(b[l])) : AsF32(b[l]));
            } else if (IsSigned(in.type)) {
              result = CompareInt(cmp, ReadSigned(a[l], width), ReadSigned(b[l], width));
            } else {
              result = CompareInt(cmp, a[l] & wm, b[l] & wm);
            }
            auto combine = [&](bool value) -> uint64_t {
              if (bop == BoolOp::kNone) return value;
              bool other = ((c[l] & 1) ^ negate_c) != 0;
              return bop == BoolOp::kAnd ? (value && other)
                     : bop == BoolOp::kOr ? (value || other)
                                          : (value != other);
            };
            uint64_t p = combine(result);
            uint64_t np = combine(!result);
            d[l] = p;
            if (q != nullptr) q[l] = np;
          });
          break;
        }
        case Op::kCvt: {
          const Type from = in.type2;
          const Rounding rounding = static_cast<Rounding>(in.mod2);
          const bool from_float = IsFloat(from);
          RoundingScope scope(from_float && is_float ? in.mod2 : 0);
          ForLanes(mask, [&](int l) {
            if (!from_float && !is_float) {
              d[l] = IntToInt(a[l], from, in.type, sat);
              return;
            }
            if (from_float && !is_float) {
              double value = from == Type::kF64 ? AsF64(a[l])
                                                : static_cast<double>(ftz ? Ftz(AsF32(a[l]))
                                                                          : AsF32(a[l]));
              d[l] = FloatToInt(value, rounding, in.type);
              return;
            }
            if (!from_float) {  // integer -> float, rounded per .rn/.rz/.rm/.rp
              RoundingScope int_rounding(in.mod2);
              uint64_t value = ReadInt(a[l], from);
              if (in.type == Type::kF64) {
                d[l] = fout(IsSigned(from) ? static_cast<double>(static_cast<int64_t>(value))
                                           : static_cast<double>(value));
              } else {
                d[l] = fout(IsSigned(from) ? static_cast<float>(static_cast<int64_t>(value))
                                           : static_cast<float>(value));
              }
              return;
            }
            double value = from == Type::kF64 ? AsF64(a[l])
                                              : static_cast<double>(ftz ? Ftz(AsF32(a[l]))
                                                                        : AsF32(a[l]));
            // Integer rounding modes on float -> float round to an integral value.
            switch (rounding) {
              case Rounding::kRni: value = std::nearbyint(value); break;
              case Rounding::kRzi: value = std::trunc(value); break;
              case Rounding::kRmi: value = std::floor(value); break;
              case Rounding::kRpi: value = std::ceil(value); break;
              default: break;
            }
            d[l] = in.type == Type::kF64 ? fout(value) : fout(static_cast<float>(value));
          });
          break;
        }
        case Op::kCvta: {
          const uint64_t window = in.space == Space::kShared  ? kSharedWindow
                                  : in.space == Space::kLocal ? kLocalWindow
                                                              : 0;
          const bool to_generic = in.flags & kFlagToGeneric;
          ForLanes(mask, [&](int l) { d[l] = (to_generic ? a[l] + window : a[l] - window) & wm; });
          break;
        }
        case Op::kRcp:
          float_unary([](auto x) { return decltype(x)(1) / x; });
          break;
        case Op::kSqrt:
          float_unary([](auto x) { return std::sqrt(x); });
          break;
        case Op::kRsqrt:
          float_unary([](auto x) { return decltype(x)(1) / std::sqrt(x); });
          break;
        case Op::kSin:
          float_unary([](auto x) { return std::sin(x); });
          break;
        case Op::kCos:
          float_unary([](auto x) { return std::cos(x); });
          break;
        case Op::kEx2:
          float_unary([](auto x) { return std::exp2(x); });
          break;
        case Op::kLg2:
          float_unary([](auto x) { return std::log2(x); });
          break;
        case Op::kTanh:
          float_unary([](auto x) { return std::tanh(x); });
          break;
        case Op::kLd:
        case Op::kSt: {
          const bool store = in.op == Op::kSt;
          const uint32_t size = static_cast<uint32_t>(width / 8);
          const uint32_t total = size * in.vec;
          const uint64_t* base = TALLY_R(in.address);
          const bool sign_extend = IsSigned(in.type);
          bool ok = true;
          ForLanes(mask, [&](int l) {
            if (!ok) return;
            uint64_t address = base[l] + in.offset;
            uint8_t* host = Translate(in.space, address, total, warp, l, pc, store);
            if (host == nullptr) {
              ok = false;
              return;
            }
            if (address % total != 0) {
              Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS,
                    "misaligned access of " + std::to_string(total) + " bytes");
              ok = false;
              return;
            }
            for (int i = 0; i < in.vec; ++i) {
              if (store) {
                uint64_t value = TALLY_R(in.src[i])[l];
                std::memcpy(host + i * size, &value, size);
              } else {
                uint64_t value = 0;
                std::memcpy(&value, host + i * size, size);
                TALLY_R(in.dst[i])[l] = sign_extend ? static_cast<uint64_t>(ReadSigned(value, width))
                                                   : value;
              }
            }
          });
          if (!ok) return WarpStatus::kFault;
          break;
        }
        case Op::kAtom: {
          const uint32_t size = static_cast<uint32_t>(width / 8);
          const uint64_t* base = TALLY_R(in.address);
          const bool has_result = in.flags & kFlagHasResult;
          const AtomOp op = static_cast<AtomOp>(in.mod);
          bool ok = true;
          ForLanes(mask, [&](int l) {
            if (!ok) return;
            uint64_t address = base[l] + in.offset;
            uint8_t* host = Translate(in.space, address, size, warp, l, pc, true);
            if (host == nullptr || address % size != 0) {
              if (host != nullptr) {
                Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned atomic");
              }
              ok = false;
              return;
            }
            uint64_t old = size == 4 ? Atomic(reinterpret_cast<uint32_t*>(host), op, in.type, a[l],
                                              b != nullptr ? b[l] : 0)
                                     : Atomic(reinterpret_cast<uint64_t*>(host), op, in.type, a[l],
                                              b != nullptr ? b[l] : 0);
            if (has_result) d[l] = old;
          });
          if (!ok) return WarpStatus::kFault;
          break;
        }
        case Op::kFence:
          std::atomic_thread_fence(std::memory_order_seq_cst);
          break;
        case Op::kShfl: {
          // PTX ISA, "shfl.sync": c packs the segment mask (bits 8..12) and the clamp value.
          uint64_t source[32];
          std::memcpy(source, a, sizeof(source));
          const ShflMode mode = static_cast<ShflMode>(in.mod);
          uint64_t* p = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
          ForLanes(mask, [&](int l) {
            uint32_t lane_b = static_cast<uint32_t>(b[l]) & 0x1f;
            uint32_t clamp = static_cast<uint32_t>(c[l]) & 0x1f;
            uint32_t segmask = (static_cast<uint32_t>(c[l]) >> 8) & 0x1f;
            uint32_t max_lane = (l & segmask) | (clamp & ~segmask);
            uint32_t min_lane = l & segmask;
            int64_t j = 0;
            bool valid = false;
            switch (mode) {
              case ShflMode::kUp: j = l - static_cast<int64_t>(lane_b); valid = j >= max_lane; break;
              case ShflMode::kDown: j = l + lane_b; valid = j <= max_lane; break;
              case ShflMode::kBfly: j = l ^ lane_b; valid = j <= max_lane; break;
              case ShflMode::kIdx: j = min_lane | (lane_b & ~segmask); valid = j <= max_lane; break;
            }
            if (!valid) j = l;
            d[l] = source[j] & 0xffffffffu;
            if (p != nullptr) p[l] = valid;
          });
          break;
        }
        case Op::kVote: {
          const uint64_t negate = (in.flags & kFlagNegateSrcB) ? 1 : 0;
          uint32_t members = 0, votes = 0;
          ForLanes(mask, [&](int l) {
            members |= 1u << l;
            if (((a[l] & 1) ^ negate) != 0) votes |= 1u << l;
          });
          members &= static_cast<uint32_t>(b[std::countr_zero(mask)]);
          votes &= members;
          uint64_t result = 0;
          switch (static_cast<VoteMode>(in.mod)) {
            case VoteMode::kAll: result = votes == members; break;
            case VoteMode::kAny: result = votes != 0; break;
            case VoteMode::kUni: result = votes == 0 || votes == members; break;
            case VoteMode::kBallot: result = votes; break;
          }
          ForLanes(mask, [&](int l) { d[l] = result; });
          break;
        }
        case Op::kActiveMask:
          ForLanes(mask, [&](int l) { d[l] = warp.active; });
          break;
        case Op::kClock: {
          int64_t now = NowNs(in.mod == 2);
          ForLanes(mask, [&](int l) { d[l] = in.mod == 0 ? now & 0xffffffff : now; });
          break;
        }
        case Op::kTrap:
          Fault(warp, std::countr_zero(mask), pc, CUDA_ERROR_LAUNCH_FAILED, "trap");
          return WarpStatus::kFault;
        case Op::kBra: {
          const uint32_t stay = warp.active & ~mask;
          if (stay == 0 && in.target < warp.others_min) {
            warp.cur_pc = in.target;  // uniform branch, still the smallest pc: keep running
            continue;
          }
          for (uint32_t m = mask; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = in.target;
          for (uint32_t m = stay; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = pc + 1;
          Schedule(warp);
          continue;
        }
        case Op::kExit:
          warp.live &= ~mask;
          warp.active &= ~mask;
          exited_ += std::popcount(mask);
          break;
        case Op::kBarSync:
        case Op::kBarArrive: {
          int first = std::countr_zero(mask);
          uint64_t barrier = a[first];
          uint64_t count = b != nullptr ? b[first] : 0;
          if (barrier >= 16) {
            Fault(warp, first, pc, CUDA_ERROR_LAUNCH_FAILED, "barrier id out of range");
            return WarpStatus::kFault;
          }
          bool wait = in.op == Op::kBarSync;
          Arrive(warp, mask, static_cast<uint32_t>(barrier), static_cast<uint32_t>(count), wait);
          if (wait) {
            for (uint32_t m = mask; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = pc + 1;
            warp.active &= ~mask;
          }
          break;
        }
      }
    }
    // Advance the lanes still active; merge with parked lanes that reached the same pc.
    if (warp.active == 0) {
      Schedule(warp);
      continue;
    }
    ++warp.cur_pc;
    if (warp.cur_pc >= warp.others_min) reschedule(warp.cur_pc);
  }
  return warp.live == 0 ? WarpStatus::kDone : WarpStatus::kWaiting;
}

#undef TALLY_R

}  // namespace tally::emu::exec
