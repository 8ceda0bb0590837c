// Integer and f32/f64 arithmetic: add, sub, mul, mad, fma, div, rem, min, max, abs, neg, sad,
// and the extended-precision forms that read or write the carry flag (addc, subc, madc, .cc).
// Float operations round per .rn/.rz/.rm/.rp (FloatLanes; the file is compiled with
// -frounding-math) and honour .ftz and .sat.
#include <algorithm>
#include <cmath>
#include <limits>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

// d = op(a, b) on every lane, in the instruction's integer type.
template <typename Fn>
void IntBinary(const Inst& in, uint32_t mask, const Operands& r, Fn op) {
  DispatchInt(in.type, [&](auto t) {
    using T = decltype(t);
    using U = std::make_unsigned_t<T>;
    ForLanes(mask, [&](int l) {
      r.d[l] = static_cast<U>(op(static_cast<T>(r.a[l]), static_cast<T>(r.b[l])));
    });
  });
}

// a + b or a - b clamped to the s32 range (add.sat.s32, sub.sat.s32).
template <typename Fn>
void SaturatedS32(uint32_t mask, const Operands& r, Fn op) {
  ForLanes(mask, [&](int l) {
    int64_t value = op(ReadSigned(r.a[l], 32), ReadSigned(r.b[l], 32));
    r.d[l] = static_cast<uint32_t>(std::clamp<int64_t>(value, INT32_MIN, INT32_MAX));
  });
}

// Extended precision (PTX ISA, "Extended-Precision Integer Arithmetic"): add, sub or mad with
// carry-in and/or carry-out through CC.CF.
void WithCarry(const Inst& in, uint32_t mask, const Operands& r, uint64_t* carry) {
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  const int width = TypeBits(in.type);
  const uint64_t wm = WidthMask(width);
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
    r.d[l] = static_cast<uint64_t>(result) & wm;
    if (carry_out) carry[l] = static_cast<uint64_t>(result >> width) & 1;
  });
}

// Integer mul and mad: .lo, .hi (with .sat on mad.hi.s32) and .wide.
void IntMulMad(const Inst& in, uint32_t mask, const Operands& r) {
  uint64_t* d = r.d;
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  const int width = TypeBits(in.type);
  const uint64_t wm = WidthMask(width);
  const bool sat = in.flags & kFlagSat;
  const bool mad = in.op == Op::kMad;
  const MulMode mode = static_cast<MulMode>(in.mod);
  // The frequent .lo forms get branch-free lane loops the compiler can vectorise.
  if (mode == MulMode::kLo && mad) {
    ForLanes(mask, [&](int l) { d[l] = (a[l] * b[l] + c[l]) & wm; });
    return;
  }
  if (mode == MulMode::kLo) {
    ForLanes(mask, [&](int l) { d[l] = (a[l] * b[l]) & wm; });
    return;
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
}

}  // namespace

void Block::ExecuteArithmetic(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  if ((in.flags & (kFlagCarryIn | kFlagCarryOut)) != 0) {
    WithCarry(in, mask, r, TALLY_R(SpecialSlot::kCarry));
    return;
  }
  uint64_t* d = r.d;
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  const int width = TypeBits(in.type);
  const uint64_t wm = WidthMask(width);
  const bool is_float = IsFloat(in.type);
  const bool sat = in.flags & kFlagSat;
  switch (in.op) {
    case Op::kAdd:
      if (is_float) {
        FloatLanes<2>(in, mask, r, [](auto x, auto y) { return x + y; });
      } else if (sat) {
        SaturatedS32(mask, r, [](int64_t x, int64_t y) { return x + y; });
      } else {
        ForLanes(mask, [&](int l) { d[l] = (a[l] + b[l]) & wm; });
      }
      break;
    case Op::kSub:
      if (is_float) {
        FloatLanes<2>(in, mask, r, [](auto x, auto y) { return x - y; });
      } else if (sat) {
        SaturatedS32(mask, r, [](int64_t x, int64_t y) { return x - y; });
      } else {
        ForLanes(mask, [&](int l) { d[l] = (a[l] - b[l]) & wm; });
      }
      break;
    case Op::kMul:
    case Op::kMad:
      if (is_float) {  // mul only: float mad was lowered to fma
        FloatLanes<2>(in, mask, r, [](auto x, auto y) { return x * y; });
      } else {
        IntMulMad(in, mask, r);
      }
      break;
    case Op::kFma:
      FloatLanes<3>(in, mask, r, [](auto x, auto y, auto z) { return std::fma(x, y, z); });
      break;
    case Op::kDiv:
      if (is_float) {
        FloatLanes<2>(in, mask, r, [](auto x, auto y) { return x / y; });
      } else {
        IntBinary(in, mask, r, [](auto x, auto y) { return IntDiv(x, y); });
      }
      break;
    case Op::kRem:
      IntBinary(in, mask, r, [](auto x, auto y) { return IntRem(x, y); });
      break;
    case Op::kMin:
    case Op::kMax: {
      const bool is_min = in.op == Op::kMin;
      if (is_float) {
        // .NaN: a NaN operand gives the canonical NaN instead of the other operand.
        const bool nan = in.mod & kHalfNan;
        FloatLanes<2>(in, mask, r, [&](auto x, auto y) {
          if (nan && (std::isnan(x) || std::isnan(y))) {
            return std::numeric_limits<decltype(x)>::quiet_NaN();
          }
          return is_min ? std::fmin(x, y) : std::fmax(x, y);
        });
      } else {
        IntBinary(in, mask, r,
                  [&](auto x, auto y) { return is_min ? std::min(x, y) : std::max(x, y); });
      }
      break;
    }
    case Op::kAbs:
    case Op::kNeg: {
      const bool neg = in.op == Op::kNeg;
      if (is_float) {
        // Sign-bit operations, so that NaN and -0 behave as on the GPU.
        const bool ftz = in.flags & kFlagFtz;
        const uint64_t sign = 1ull << (width - 1);
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
    default: {  // kSad: c + |a - b| (PTX ISA, "sad"), the difference in the type's signedness
      const bool is_signed = IsSigned(in.type);
      ForLanes(mask, [&](int l) {
        uint64_t x = a[l] & wm, y = b[l] & wm;
        bool less = is_signed ? ReadSigned(x, width) < ReadSigned(y, width) : x < y;
        d[l] = (c[l] + (less ? y - x : x - y)) & wm;
      });
      break;
    }
  }
}

}  // namespace tally::emu::exec
