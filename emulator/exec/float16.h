// Scalar semantics of the 16-bit floating-point formats f16 (IEEE binary16) and bf16 (bfloat16)
// on their bit patterns. Every result is rounded exactly once, as IEEE 754 requires: sums and
// fused products are formed in double with round-to-odd (exact when the format has at least two
// bits more than the target; Boldo & Melquiond, "When double rounding is odd"), then rounded to
// the 16-bit format in the instruction's mode. NaN results are the canonical NaN 0x7fff, as on
// the GPU and in cuda_fp16.h / cuda_bf16.h.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "emulator/exec/program.h"

namespace tally::emu::exec {

inline constexpr uint16_t kHalfCanonicalNan = 0x7fff;

// Exponent and stored-mantissa bits of f16 (kF16/kF16x2) or bf16 (kBF16/kBF16x2).
struct HalfFormat {
  int exponent_bits;
  int mantissa_bits;
};
inline HalfFormat FormatOf(Type type) {
  return (type == Type::kBF16 || type == Type::kBF16x2) ? HalfFormat{8, 7} : HalfFormat{5, 10};
}

inline bool HalfIsNan(uint32_t bits, HalfFormat f) {
  uint32_t exponent_mask = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  return (bits & exponent_mask) == exponent_mask && (bits & ((1u << f.mantissa_bits) - 1)) != 0;
}

// The exact value (both formats are subsets of f32).
inline float HalfToFloat(uint32_t bits, HalfFormat f) {
  if (f.exponent_bits == 8) return std::bit_cast<float>((bits & 0xffff) << 16);
  uint32_t sign = (bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal, exact
  return sign != 0 ? -magnitude : magnitude;
}

// Rounds the exact value (-1)^negative * significand * 2^exponent to the format. Modes: kRn
// (also kDefault), kRz, kRm, kRp.
inline uint16_t RoundToHalf(bool negative, uint64_t significand, int exponent, HalfFormat f,
                            Rounding mode) {
  const uint16_t sign = negative ? 0x8000 : 0;
  if (significand == 0) return sign;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int emin = 1 - bias;
  const int top = static_cast<int>(std::bit_width(significand)) - 1 + exponent;
  const int quantum = std::max(top, emin) - f.mantissa_bits;  // exponent of the last kept bit
  const int shift = quantum - exponent;
  uint64_t kept;
  bool up = false;
  if (shift <= 0) {
    kept = significand << -shift;  // exact: at most mantissa_bits + 1 bits
  } else {
    kept = shift >= 64 ? 0 : significand >> shift;
    uint64_t rest = shift >= 64 ? significand : significand & ((uint64_t{1} << shift) - 1);
    bool inexact = rest != 0;
    switch (mode) {
      case Rounding::kRz:
        break;
      case Rounding::kRm:
        up = inexact && negative;
        break;
      case Rounding::kRp:
        up = inexact && !negative;
        break;
      default: {
        if (shift > 64) break;  // below half of the last kept bit
        uint64_t half = uint64_t{1} << (shift - 1);
        up = rest > half || (rest == half && (kept & 1) != 0);
        break;
      }
    }
  }
  kept += up;
  int biased = quantum + f.mantissa_bits + bias;
  if (kept >> (f.mantissa_bits + 1) != 0) {  // rounding carried into a new binade
    kept >>= 1;
    ++biased;
  }
  if (kept >> f.mantissa_bits == 0) biased = 0;  // subnormal (or zero)
  const int max_biased = (1 << f.exponent_bits) - 1;
  if (biased >= max_biased) {
    bool to_infinity = mode == Rounding::kRn || mode == Rounding::kDefault ||
                       (mode == Rounding::kRm && negative) || (mode == Rounding::kRp && !negative);
    uint16_t inf = static_cast<uint16_t>(max_biased << f.mantissa_bits);
    return sign | (to_infinity ? inf : static_cast<uint16_t>(inf - 1));
  }
  uint64_t mantissa = kept & ((uint64_t{1} << f.mantissa_bits) - 1);
  return sign | static_cast<uint16_t>((uint64_t(biased) << f.mantissa_bits) | mantissa);
}

// A double (exact for f32 sources) rounded once to the format.
inline uint16_t DoubleToHalf(double value, HalfFormat f, Rounding mode) {
  uint64_t bits = std::bit_cast<uint64_t>(value);
  bool negative = bits >> 63;
  uint64_t exponent = (bits >> 52) & 0x7ff;
  uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  uint16_t sign = negative ? 0x8000 : 0;
  if (exponent == 0x7ff) {
    if (mantissa != 0) return kHalfCanonicalNan;
    return sign | static_cast<uint16_t>(((1 << f.exponent_bits) - 1) << f.mantissa_bits);
  }
  if (exponent == 0) return RoundToHalf(negative, mantissa, -1074, f, mode);
  return RoundToHalf(negative, mantissa | (uint64_t{1} << 52), static_cast<int>(exponent) - 1075, f,
                     mode);
}

// An integer (sign- or zero-extended to 64 bits) rounded once to the format.
inline uint16_t IntToHalf(uint64_t value, bool is_signed, HalfFormat f, Rounding mode) {
  bool negative = is_signed && static_cast<int64_t>(value) < 0;
  return RoundToHalf(negative, negative ? 0 - value : value, 0, f, mode);
}

// x + y rounded to odd in double: the result carries a set last bit when it is inexact, so that
// one more rounding to a format at least two bits narrower is correct (see the file comment).
inline double SumRoundedToOdd(double x, double y) {
  double s = x + y;
  if (!std::isfinite(s)) return s;
  // TwoSum: s + error == x + y exactly (Knuth).
  double yy = s - x;
  double error = (x - (s - yy)) + (y - yy);
  if (error == 0) return s;
  // The truncation of x + y is s, or its neighbour towards zero when s was rounded away.
  double truncated = (error > 0) == (s > 0) ? s : std::nextafter(s, 0.0);
  return std::bit_cast<double>(std::bit_cast<uint64_t>(truncated) | 1);
}

// a + b rounded to nearest even, as atom.add.noftz.{f16,bf16} computes it.
inline uint16_t HalfAdd(uint32_t a, uint32_t b, HalfFormat f) {
  return DoubleToHalf(SumRoundedToOdd(HalfToFloat(a, f), HalfToFloat(b, f)), f, Rounding::kRn);
}
// The same for each half of a packed pair.
inline uint32_t PackedHalfAdd(uint32_t a, uint32_t b, HalfFormat f) {
  return HalfAdd(a & 0xffff, b & 0xffff, f) | uint32_t{HalfAdd(a >> 16, b >> 16, f)} << 16;
}

}  // namespace tally::emu::exec
