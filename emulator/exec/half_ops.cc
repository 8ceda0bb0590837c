// The f16/bf16 instructions (scalar and packed x2: each 16-bit half of a 32-bit register is one
// value, the first in the low half), conversions to and from them, and the comparisons setp on
// them and set on every type. Scalar semantics come from float16.h.
#include <algorithm>

#include "emulator/exec/block.h"
#include "emulator/exec/float16.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

constexpr Rounding kNearest = Rounding::kRn;

uint32_t FlushSubnormal(uint32_t bits, HalfFormat f) {
  bool subnormal = (bits & (((1u << f.exponent_bits) - 1) << f.mantissa_bits)) == 0;
  return subnormal ? bits & 0x8000 : bits;
}

// min/max (PTX ISA, "min", "max"): -0 orders below +0; a NaN operand is ignored unless .NaN.
uint32_t HalfMinMax(bool is_min, uint32_t a, uint32_t b, uint8_t mode, HalfFormat f) {
  bool nan_a = HalfIsNan(a, f), nan_b = HalfIsNan(b, f);
  if (nan_a || nan_b) {
    if ((mode & kHalfNan) != 0 || (nan_a && nan_b)) return kHalfCanonicalNan;
    return nan_a ? b : a;
  }
  uint32_t sign = (mode & kHalfXorsignAbs) != 0 ? (a ^ b) & 0x8000 : 0;
  if ((mode & kHalfXorsignAbs) != 0) {
    a &= 0x7fff;
    b &= 0x7fff;
  }
  float x = HalfToFloat(a, f), y = HalfToFloat(b, f);
  bool a_first = x < y || (x == y && (a & 0x8000) != 0);  // a orders below b
  uint32_t result = a_first == is_min ? a : b;
  if ((mode & kHalfRelu) != 0 && (result & 0x8000) != 0) result = 0;
  return result | sign;
}

// One f16/bf16 value of kHalfArith.
uint32_t HalfArith(Op op, uint32_t a, uint32_t b, uint32_t c, HalfFormat f, bool ftz, bool sat,
                   uint8_t mode) {
  if (ftz) {
    a = FlushSubnormal(a, f);
    b = FlushSubnormal(b, f);
    c = FlushSubnormal(c, f);
  }
  switch (op) {
    case Op::kNeg:
      return a ^ 0x8000;
    case Op::kAbs:
      return a & 0x7fff;
    case Op::kMin:
    case Op::kMax:
      return HalfMinMax(op == Op::kMin, a, b, mode, f);
    default:
      break;
  }
  // Products of two 16-bit values are exact in double; sums and fused sums round to odd there.
  double x = HalfToFloat(a, f), y = HalfToFloat(b, f), z = HalfToFloat(c, f);
  double exact;
  switch (op) {
    case Op::kAdd:
      if (!sat && !ftz) return HalfAdd(a, b, f);
      exact = SumRoundedToOdd(x, y);
      break;
    case Op::kSub:
      exact = SumRoundedToOdd(x, -y);
      break;
    case Op::kMul:
      exact = x * y;
      break;
    case Op::kFma:
      exact = SumRoundedToOdd(x * y, z);
      break;
    case Op::kEx2:  // approximate functions: the correctly rounded value
      exact = std::exp2(x);
      break;
    default:  // kTanh
      exact = std::tanh(x);
      break;
  }
  uint32_t result = DoubleToHalf(exact, f, kNearest);
  if (ftz) result = FlushSubnormal(result, f);
  if (sat) {
    if (HalfIsNan(result, f) || (result & 0x8000) != 0) return 0;
    if (HalfToFloat(result, f) > 1.0f) return DoubleToHalf(1.0, f, kNearest);
  }
  if ((mode & kHalfRelu) != 0 && (result & 0x8000) != 0 && !HalfIsNan(result, f)) return 0;
  return result;
}

// The value of a register read as (scalar) type `type`, exactly, as a double.
double ValueOf(uint64_t bits, Type type, bool ftz) {
  if (IsHalf(type)) {
    HalfFormat f = FormatOf(type);
    uint32_t half = bits & 0xffff;
    return HalfToFloat(ftz ? FlushSubnormal(half, f) : half, f);
  }
  if (type == Type::kF64) return AsF64(bits);
  if (type == Type::kF32) return ftz ? Ftz(AsF32(bits)) : AsF32(bits);
  uint64_t value = ReadInt(bits, type);
  return IsSigned(type) ? static_cast<double>(static_cast<int64_t>(value))
                        : static_cast<double>(value);
}

// Comparison of two scalars of any type (integers compared exactly, not through double).
bool CompareValues(CmpOp op, uint64_t a, uint64_t b, Type type, bool ftz) {
  if (IsFloat(type)) return CompareFloat(op, ValueOf(a, type, ftz), ValueOf(b, type, ftz));
  int width = TypeBits(type);
  if (IsSigned(type)) return CompareInt(op, ReadSigned(a, width), ReadSigned(b, width));
  return CompareInt(op, a & WidthMask(width), b & WidthMask(width));
}

// cvt to f16/bf16 from a float value (already exact in a double) or an integer.
uint32_t ToHalf(uint64_t bits, Type from, Type to, Rounding rounding, uint8_t mode, bool ftz,
                bool sat) {
  HalfFormat f = FormatOf(to);
  uint32_t result;
  if (!IsFloat(from)) {
    result = IntToHalf(ReadInt(bits, from), IsSigned(from), f, rounding);
  } else {
    double value = RoundIntegral(ValueOf(bits, from, ftz), rounding);
    bool integral = rounding >= Rounding::kRni;
    result = DoubleToHalf(value, f, integral ? kNearest : rounding);
  }
  if (HalfIsNan(result, f)) return sat ? 0 : kHalfCanonicalNan;
  if ((mode & kHalfRelu) != 0 && (result & 0x8000) != 0) result = 0;
  if (sat) {
    if ((result & 0x8000) != 0) result = 0;
    if (HalfToFloat(result, f) > 1.0f) result = DoubleToHalf(1.0, f, kNearest);
  }
  uint32_t infinity = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  if ((mode & kHalfSatfinite) != 0 && (result & 0x7fff) == infinity) result -= 1;
  return result;
}

}  // namespace

void Block::ExecuteHalf(const Inst& in, Warp& warp, uint32_t mask) {
  uint64_t* d = TALLY_R(in.dst[0]);
  const uint64_t* a = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
  const uint64_t* b = in.src[1] != kNoSlot ? TALLY_R(in.src[1]) : nullptr;
  const uint64_t* c = in.src[2] != kNoSlot ? TALLY_R(in.src[2]) : nullptr;
  const bool ftz = in.flags & kFlagFtz;
  const bool sat = in.flags & kFlagSat;
  switch (in.op) {
    case Op::kHalfArith: {
      const HalfFormat f = FormatOf(in.type);
      const Op op = static_cast<Op>(in.mod);
      const int halves = IsPackedHalf(in.type) ? 2 : 1;
      ForLanes(mask, [&](int l) {
        uint64_t result = 0;
        for (int h = 0; h < halves; ++h) {
          auto half = [&](const uint64_t* r) -> uint32_t {
            return r != nullptr ? static_cast<uint32_t>(r[l] >> (16 * h)) & 0xffff : 0;
          };
          result |= uint64_t{HalfArith(op, half(a), half(b), half(c), f, ftz, sat, in.mod2)}
                    << (16 * h);
        }
        d[l] = result;
      });
      break;
    }
    case Op::kHalfCvt: {
      const Rounding rounding = static_cast<Rounding>(in.mod2);
      const Type from = in.type2, to = in.type;
      ForLanes(mask, [&](int l) {
        if (IsPackedHalf(to)) {  // a goes to the upper half, b to the lower
          d[l] = uint64_t{ToHalf(a[l], from, to, rounding, in.mod, ftz, sat)} << 16 |
                 ToHalf(b[l], from, to, rounding, in.mod, ftz, sat);
        } else if (IsHalf(to)) {
          d[l] = ToHalf(a[l], from, to, rounding, in.mod, ftz, sat);
        } else if (!IsFloat(to)) {
          d[l] = FloatToInt(ValueOf(a[l], from, false), rounding, to);
        } else {
          double value = RoundIntegral(ValueOf(a[l], from, false), rounding);  // exact
          if (sat) value = SaturateUnit(value);
          d[l] = to == Type::kF64 ? Bits(value) : Bits(static_cast<float>(value));
        }
      });
      break;
    }
    case Op::kHalfSetp:
    case Op::kSet: {
      // Each compared value's result, combined with the predicate c; setp writes p (and q with
      // the complement, or for x2 the high half's result), set writes masks or 1.0 values.
      const CmpOp cmp = static_cast<CmpOp>(in.mod);
      const BoolOp bop = static_cast<BoolOp>(in.mod2);
      const uint64_t negate_c = (in.flags & kFlagNegateSrcB) ? 1 : 0;
      const Type compared = in.op == Op::kSet ? in.type2 : in.type;
      const bool packed = IsPackedHalf(compared);
      const Type element = compared == Type::kF16x2    ? Type::kF16
                           : compared == Type::kBF16x2 ? Type::kBF16
                                                       : compared;
      uint64_t* q = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
      const Type dtype = in.type;
      const uint64_t one = dtype == Type::kF32 ? Bits(1.0f)
                           : IsHalf(dtype)     ? DoubleToHalf(1.0, FormatOf(dtype), kNearest)
                           : packed            ? 0xffff
                                               : 0xffffffffu;
      ForLanes(mask, [&](int l) {
        auto result = [&](int h, bool negate) -> bool {
          uint64_t x = packed ? (a[l] >> (16 * h)) & 0xffff : a[l];
          uint64_t y = packed ? (b[l] >> (16 * h)) & 0xffff : b[l];
          bool value = CompareValues(cmp, x, y, element, ftz) != negate;
          if (bop == BoolOp::kNone) return value;
          bool other = ((c[l] & 1) ^ negate_c) != 0;
          return bop == BoolOp::kAnd  ? (value && other)
                 : bop == BoolOp::kOr ? (value || other)
                                      : (value != other);
        };
        if (in.op == Op::kSet) {
          d[l] = packed ? (result(0, false) ? one : 0) | (result(1, false) ? one << 16 : 0)
                        : (result(0, false) ? one : 0);
        } else if (packed) {
          d[l] = result(0, false);
          if (q != nullptr) q[l] = result(1, false);
        } else {
          d[l] = result(0, false);
          if (q != nullptr) q[l] = result(0, true);
        }
      });
      break;
    }
    default:
      break;
  }
}

}  // namespace tally::emu::exec
