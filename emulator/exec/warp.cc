// The interpreter: runs one warp's lanes that share the smallest program counter together
// (per-lane PCs reconverge structured code at its join points and handle arbitrary branches),
// one decoded instruction at a time over all active lanes. No allocation or lookup by name
// happens here; registers are slot-major arrays of 32 lanes.
#include <atomic>
#include <cfenv>
#include <chrono>
#include <cstring>

#include "emulator/exec/alu.h"
#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

std::atomic<uint32_t> g_fence_word{0};

int64_t NowNs(bool wall) {
  auto now = wall ? std::chrono::system_clock::now().time_since_epoch()
                  : std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
}

}  // namespace

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
    lane_instructions_ += std::popcount(mask);
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
      DispatchFloat(in.type,
                    [&](auto t) { ForLanes(mask, [&](int l) { d[l] = fout(op(fin(t, a[l]))); }); });
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
          // The frequent .lo forms get branch-free lane loops the compiler can vectorise.
          if (mode == MulMode::kLo && mad) {
            ForLanes(mask, [&](int l) { d[l] = (a[l] * b[l] + c[l]) & wm; });
            break;
          }
          if (mode == MulMode::kLo) {
            ForLanes(mask, [&](int l) { d[l] = (a[l] * b[l]) & wm; });
            break;
          }
          ForLanes(mask, [&](int l) {
            uint64_t addend = mad ? c[l] : 0;
            if (mode == MulMode::kWide) {
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
            // .NaN: a NaN operand gives the canonical NaN instead of the other operand.
            const bool nan = in.mod & kHalfNan;
            float_binary([&](auto x, auto y) {
              if (nan && (std::isnan(x) || std::isnan(y))) {
                return std::numeric_limits<decltype(x)>::quiet_NaN();
              }
              return is_min ? std::fmin(x, y) : std::fmax(x, y);
            });
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
              // Negation in unsigned arithmetic: wraps for the most negative value as PTX does.
              uint64_t value = a[l];
              bool negative = ReadSigned(value, width) < 0;
              d[l] = (neg || negative ? 0 - value : value) & wm;
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
              d[l] =
                  static_cast<uint64_t>(ReadSigned(a[l], width) >> std::min<uint64_t>(n, 63)) & wm;
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
        case Op::kShf: {
          // Funnel shift of the 64-bit {b, a} (PTX ISA, "shf"): .l keeps the upper, .r the
          // lower 32 bits; .wrap takes the amount mod 32, .clamp caps it at 32.
          const bool right = in.mod & 1, clamp = in.mod & 2;
          ForLanes(mask, [&](int l) {
            uint64_t n = clamp ? std::min<uint64_t>(c[l] & 0xffffffffu, 32) : c[l] & 31;
            uint64_t both = (b[l] & 0xffffffffu) << 32 | (a[l] & 0xffffffffu);
            d[l] = right ? (both >> n) & 0xffffffffu : ((both << n) >> 32) & 0xffffffffu;
          });
          break;
        }
        case Op::kLop3: {
          // Any logic function of three inputs, given as the truth table `lut` indexed by
          // (a << 2 | b << 1 | c) for each bit (PTX ISA, "lop3").
          const uint64_t* lut = TALLY_R(in.src[3]);
          ForLanes(mask, [&](int l) {
            uint64_t result = 0;
            for (int term = 0; term < 8; ++term) {
              if (((lut[l] >> term) & 1) == 0) continue;
              result |= ((term & 4) ? a[l] : ~a[l]) & ((term & 2) ? b[l] : ~b[l]) &
                        ((term & 1) ? c[l] : ~c[l]);
            }
            d[l] = result & wm;
          });
          break;
        }
        case Op::kSad: {
          // c + |a - b| (PTX ISA, "sad"), the difference taken in the operation's signedness.
          const bool is_signed = IsSigned(in.type);
          ForLanes(mask, [&](int l) {
            uint64_t x = a[l] & wm, y = b[l] & wm;
            bool less = is_signed ? ReadSigned(x, width) < ReadSigned(y, width) : x < y;
            d[l] = (c[l] + (less ? y - x : x - y)) & wm;
          });
          break;
        }
        case Op::kCopysign: {
          // d = b with the sign of a (PTX ISA, "copysign").
          const uint64_t sign = 1ull << (width - 1);
          ForLanes(mask, [&](int l) { d[l] = ((b[l] & ~sign) | (a[l] & sign)) & wm; });
          break;
        }
        case Op::kBfind: {
          // Position of the most significant bit that differs from the sign (a set bit for
          // unsigned types); 0xffffffff when there is none (PTX ISA, "bfind").
          const bool shift_amount = in.mod == 1;
          ForLanes(mask, [&](int l) {
            uint64_t value = a[l] & wm;
            if (IsSigned(in.type) && ReadSigned(value, width) < 0) value = ~value & wm;
            if (value == 0) {
              d[l] = 0xffffffffu;
              return;
            }
            uint32_t position = std::bit_width(value) - 1;
            d[l] = shift_amount ? width - 1 - position : position;
          });
          break;
        }
        case Op::kIsspacep: {
          auto in_window = [](uint64_t address, uint64_t window) {
            return address - window < kWindowSize;
          };
          ForLanes(mask, [&](int l) {
            bool shared = in_window(a[l], kSharedWindow), local = in_window(a[l], kLocalWindow),
                 param = in_window(a[l], kParamWindow);
            switch (in.space) {
              case Space::kShared: {
                // .shared::cta: the executing CTA's window (its own or its mapa'd addresses);
                // .shared::cluster (mod 1): any CTA's of the cluster.
                const uint32_t tag = static_cast<uint32_t>(a[l] - kSharedWindow) >> kClusterRankShift;
                d[l] = shared && (in.mod == 1 || tag == 0 || tag == cluster_rank_ + 1);
                break;
              }
              case Space::kLocal:
                d[l] = local;
                break;
              case Space::kParam:
                d[l] = param;
                break;
              default:
                d[l] = !shared && !local && !param;
                break;
            }
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
              return bop == BoolOp::kAnd  ? (value && other)
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
              double value = from == Type::kF64
                                 ? AsF64(a[l])
                                 : static_cast<double>(ftz ? Ftz(AsF32(a[l])) : AsF32(a[l]));
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
            double value = from == Type::kF64
                               ? AsF64(a[l])
                               : static_cast<double>(ftz ? Ftz(AsF32(a[l])) : AsF32(a[l]));
            // Integer rounding modes on float -> float round to an integral value.
            switch (rounding) {
              case Rounding::kRni:
                value = std::nearbyint(value);
                break;
              case Rounding::kRzi:
                value = std::trunc(value);
                break;
              case Rounding::kRmi:
                value = std::floor(value);
                break;
              case Rounding::kRpi:
                value = std::ceil(value);
                break;
              default:
                break;
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
        case Op::kSt:
        case Op::kAtom:
          if (!ExecuteMemory(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kTex:
        case Op::kSuld:
        case Op::kSust:
          if (!ExecuteTexture(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kCpAsync:
        case Op::kMbarrier:
          if (!ExecuteAsync(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kMatrix:
          if (!ExecuteMatrix(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kBuiltin:
          if (!ExecuteBuiltin(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kClusterBarrier:
        case Op::kMapa:
          if (!ExecuteCluster(in, warp, mask, pc)) return WarpStatus::kFault;
          break;
        case Op::kFence:
          // A sequentially consistent read-modify-write on one shared word: a full fence on
          // the host that ThreadSanitizer also understands (it does not model bare fences).
          g_fence_word.fetch_add(0, std::memory_order_seq_cst);
          break;
        case Op::kSet:
        case Op::kHalfArith:
        case Op::kHalfCvt:
        case Op::kHalfSetp:
          ExecuteHalf(in, warp, mask);
          break;
        case Op::kMul24:
        case Op::kDot:
        case Op::kVideo:
          ExecuteNarrowInt(in, warp, mask);
          break;
        case Op::kShfl:
        case Op::kVote:
        case Op::kActiveMask:
        case Op::kRedux:
        case Op::kMatch:
          ExecuteCollective(in, warp, mask);
          break;
        case Op::kClock: {
          const auto read = static_cast<ClockRead>(in.mod);
          const uint64_t now = static_cast<uint64_t>(NowNs(read >= ClockRead::kTimerLo));
          const uint64_t value =
              read == ClockRead::kClock || read == ClockRead::kTimerLo     ? now & 0xffffffff
              : read == ClockRead::kClockHi || read == ClockRead::kTimerHi ? now >> 32
                                                                           : now;
          ForLanes(mask, [&](int l) { d[l] = value; });
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
        case Op::kBrx: {
          // Each lane jumps to the entry of the target list its index selects.
          const std::vector<uint32_t>& table = function_->branch_tables[in.target];
          for (uint32_t m = mask; m != 0; m &= m - 1) {
            int l = std::countr_zero(m);
            uint64_t index = a[l] & 0xffffffffu;
            if (index >= table.size()) {
              Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED,
                    "brx.idx index " + std::to_string(index) + " outside its target list");
              return WarpStatus::kFault;
            }
            warp.pc[l] = table[index];
          }
          for (uint32_t m = warp.active & ~mask; m != 0; m &= m - 1) {
            warp.pc[std::countr_zero(m)] = pc + 1;
          }
          Schedule(warp);
          continue;
        }
        case Op::kCall:
          if (!ExecuteCall(in, warp, mask, pc)) return WarpStatus::kFault;
          Schedule(warp);
          continue;
        case Op::kRet:
          if (!ExecuteReturn(in, warp, mask, pc)) return WarpStatus::kFault;
          Schedule(warp);
          continue;
        case Op::kExit:
          warp.live &= ~mask;
          warp.active &= ~mask;
          exited_ += std::popcount(mask);
          break;
        case Op::kBarSync:
        case Op::kBarArrive:
        case Op::kBarRed: {
          int first = std::countr_zero(mask);
          uint64_t barrier = a[first];
          uint64_t count = b != nullptr ? b[first] : 0;
          if (barrier >= 16) {
            Fault(warp, first, pc, CUDA_ERROR_LAUNCH_FAILED, "barrier id out of range");
            return WarpStatus::kFault;
          }
          bool wait = in.op != Op::kBarArrive;
          if (in.op == Op::kBarRed) {
            const uint64_t want = (in.flags & kFlagNegateSrcB) ? 0 : 1;
            uint32_t votes = 0;
            ForLanes(mask, [&](int l) { votes |= static_cast<uint32_t>((c[l] & 1) == want) << l; });
            ArriveReduce(warp, mask, static_cast<uint32_t>(barrier), static_cast<uint32_t>(count),
                         votes, static_cast<BarRedMode>(in.mod), in.dst[0]);
          } else {
            Arrive(warp, mask, static_cast<uint32_t>(barrier), static_cast<uint32_t>(count), wait);
          }
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
