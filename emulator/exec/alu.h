// Scalar semantics of the PTX arithmetic, comparison and conversion instructions, one lane at a
// time, on the 64-bit register representation (the low TypeBits(type) bits are the value).
// Behaviour follows the PTX ISA sections of the same names; host division traps (x / 0,
// INT_MIN / -1) are avoided because PTX defines no trap there.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "emulator/exec/program.h"

namespace tally::emu::exec {

inline float AsF32(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }
inline double AsF64(uint64_t bits) { return std::bit_cast<double>(bits); }
inline uint64_t Bits(float value) { return std::bit_cast<uint32_t>(value); }
inline uint64_t Bits(double value) { return std::bit_cast<uint64_t>(value); }

// Flush-to-zero of subnormal f32 values, keeping the sign (PTX ISA, "Floating-Point
// Instructions": .ftz).
inline float Ftz(float value) {
  return std::fpclassify(value) == FP_SUBNORMAL ? std::copysign(0.0f, value) : value;
}
// .sat on floats clamps to [0.0, 1.0], NaN becoming 0.
template <typename F>
F SaturateUnit(F value) {
  if (std::isnan(value)) return 0;
  return value < 0 ? F(0) : value > 1 ? F(1) : value;
}

inline uint64_t WidthMask(int bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// The value of a register read as integer type `type`, sign- or zero-extended to 64 bits.
inline int64_t ReadSigned(uint64_t bits, int width) {
  return width >= 64 ? static_cast<int64_t>(bits)
                     : static_cast<int64_t>(bits << (64 - width)) >> (64 - width);
}
inline uint64_t ReadInt(uint64_t bits, Type type) {
  int width = TypeBits(type);
  return IsSigned(type) ? static_cast<uint64_t>(ReadSigned(bits, width)) : bits & WidthMask(width);
}

template <typename T>
T IntDiv(T a, T b) {
  if (b == 0) return static_cast<T>(~T{0});
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return a / b;
}
template <typename T>
T IntRem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return 0;
  }
  return a % b;
}

template <typename T>
bool CompareInt(CmpOp op, T a, T b) {
  switch (op) {
    case CmpOp::kEq:
      return a == b;
    case CmpOp::kNe:
      return a != b;
    case CmpOp::kLt:
    case CmpOp::kLo:
      return a < b;
    case CmpOp::kLe:
    case CmpOp::kLs:
      return a <= b;
    case CmpOp::kGt:
    case CmpOp::kHi:
      return a > b;
    case CmpOp::kGe:
    case CmpOp::kHs:
      return a >= b;
    default:
      return false;
  }
}

// Ordered comparisons are false when either operand is NaN, unordered ones true.
template <typename F>
bool CompareFloat(CmpOp op, F a, F b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (op) {
    case CmpOp::kEq:
      return !unordered && a == b;
    case CmpOp::kNe:
      return !unordered && a != b;
    case CmpOp::kLt:
      return !unordered && a < b;
    case CmpOp::kLe:
      return !unordered && a <= b;
    case CmpOp::kGt:
      return !unordered && a > b;
    case CmpOp::kGe:
      return !unordered && a >= b;
    case CmpOp::kEqu:
      return unordered || a == b;
    case CmpOp::kNeu:
      return unordered || a != b;
    case CmpOp::kLtu:
      return unordered || a < b;
    case CmpOp::kLeu:
      return unordered || a <= b;
    case CmpOp::kGtu:
      return unordered || a > b;
    case CmpOp::kGeu:
      return unordered || a >= b;
    case CmpOp::kNum:
      return !unordered;
    case CmpOp::kNan:
      return unordered;
    default:
      return false;
  }
}

// A float value rounded to an integral value by an integer rounding mode (.rni/.rzi/.rmi/.rpi,
// cvt between float types); unchanged by any other mode.
inline double RoundIntegral(double value, Rounding rounding) {
  switch (rounding) {
    case Rounding::kRni:
      return std::nearbyint(value);
    case Rounding::kRzi:
      return std::trunc(value);
    case Rounding::kRmi:
      return std::floor(value);
    case Rounding::kRpi:
      return std::ceil(value);
    default:
      return value;
  }
}

// Float -> integer with an integer rounding mode, saturating to the destination's range with
// NaN giving 0 (PTX ISA, "cvt": float-to-integer conversions saturate).
inline uint64_t FloatToInt(double value, Rounding rounding, Type to) {
  if (std::isnan(value)) return 0;
  switch (rounding) {
    case Rounding::kRni:
    case Rounding::kRn:
      value = std::nearbyint(value);
      break;
    case Rounding::kRmi:
    case Rounding::kRm:
      value = std::floor(value);
      break;
    case Rounding::kRpi:
    case Rounding::kRp:
      value = std::ceil(value);
      break;
    default:
      value = std::trunc(value);
      break;
  }
  int width = TypeBits(to);
  if (IsSigned(to)) {
    double lo = -std::ldexp(1.0, width - 1);
    double hi = std::ldexp(1.0, width - 1);
    if (value <= lo) return static_cast<uint64_t>(INT64_MIN >> (64 - width)) & WidthMask(width);
    if (value >= hi) return WidthMask(width - 1);
    return static_cast<uint64_t>(static_cast<int64_t>(value)) & WidthMask(width);
  }
  if (value <= 0) return 0;
  if (value >= std::ldexp(1.0, width)) return WidthMask(width);
  return static_cast<uint64_t>(value);
}

// Integer -> integer: the source read with its own type, optionally clamped to the
// destination's range (.sat), then truncated to the destination's width.
inline uint64_t IntToInt(uint64_t bits, Type from, Type to, bool saturate) {
  uint64_t value = ReadInt(bits, from);
  int width = TypeBits(to);
  if (saturate) {
    if (IsSigned(from)) {
      int64_t v = static_cast<int64_t>(value);
      int64_t lo = IsSigned(to) ? ReadSigned(1ull << (width - 1), width) : 0;
      int64_t hi = IsSigned(to)
                       ? static_cast<int64_t>(WidthMask(width - 1))
                       : (width >= 64 ? INT64_MAX : static_cast<int64_t>(WidthMask(width)));
      value = static_cast<uint64_t>(std::clamp(v, lo, hi));
    } else {
      uint64_t hi = IsSigned(to) ? WidthMask(width - 1) : WidthMask(width);
      value = std::min(value, hi);
    }
  }
  return value & WidthMask(width);
}

// bfe: extract `len` bits at `pos`, sign-extending signed types from the field's top bit.
inline uint64_t BitFieldExtract(uint64_t a, uint32_t pos, uint32_t len, Type type) {
  int width = TypeBits(type);
  int msb = width - 1;
  pos &= 0xff;
  len &= 0xff;
  a &= WidthMask(width);
  bool sign = false;
  if (IsSigned(type) && len != 0) {
    uint32_t top = std::min<uint32_t>(pos + len - 1, msb);
    sign = (a >> top) & 1;
  }
  uint32_t n = pos > static_cast<uint32_t>(msb) ? 0 : std::min<uint32_t>(len, width - pos);
  uint64_t field = n == 0 ? 0 : (a >> pos) & WidthMask(n);
  if (sign) field |= ~WidthMask(n) & WidthMask(width);
  return field;
}

// bfi: insert the low `len` bits of `a` into `b` at `pos`.
inline uint64_t BitFieldInsert(uint64_t a, uint64_t b, uint32_t pos, uint32_t len, int width) {
  pos &= 0xff;
  len &= 0xff;
  uint32_t n = pos >= static_cast<uint32_t>(width) ? 0 : std::min<uint32_t>(len, width - pos);
  uint64_t mask = WidthMask(n) << pos;
  return ((b & ~mask) | ((a << pos) & mask)) & WidthMask(width);
}

// prmt.b32 default mode: each result byte picks one of the 8 bytes of {b, a}, optionally
// replicating that byte's sign bit.
inline uint64_t Permute(uint64_t a, uint64_t b, uint64_t selector) {
  uint64_t bytes = (b & 0xffffffffull) << 32 | (a & 0xffffffffull);
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t sel = (selector >> (4 * i)) & 0xf;
    uint32_t byte = (bytes >> (8 * (sel & 7))) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    result |= byte << (8 * i);
  }
  return result;
}

// Upper half of the full product of two W-bit integers.
inline uint64_t MulHi(uint64_t a, uint64_t b, Type type) {
  int width = TypeBits(type);
  if (IsSigned(type)) {
    __int128 p = static_cast<__int128>(ReadSigned(a, width)) * ReadSigned(b, width);
    return static_cast<uint64_t>(p >> width) & WidthMask(width);
  }
  unsigned __int128 p =
      static_cast<unsigned __int128>(a & WidthMask(width)) * (b & WidthMask(width));
  return static_cast<uint64_t>(p >> width) & WidthMask(width);
}

// Full 2W-bit product of two W-bit integers (W <= 32).
inline uint64_t MulWide(uint64_t a, uint64_t b, Type type) {
  int width = TypeBits(type);
  if (IsSigned(type)) {
    return static_cast<uint64_t>(ReadSigned(a, width) * ReadSigned(b, width)) &
           WidthMask(2 * width);
  }
  return ((a & WidthMask(width)) * (b & WidthMask(width))) & WidthMask(2 * width);
}

}  // namespace tally::emu::exec
