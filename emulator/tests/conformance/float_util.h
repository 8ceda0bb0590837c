// Helpers for floating-point references: the host's IEEE arithmetic in a chosen rounding mode,
// and inputs that reach the corner cases (NaN, infinities, zeros, subnormals, ties).
#pragma once

#include <cfenv>
#include <cmath>
#include <limits>
#include <vector>

#include "emulator/tests/conformance/conformance.h"

namespace tally::emu::conformance {

// PTX's .rn .rz .rm(.rd) .rp(.ru), in the order the kernels list them.
constexpr int kRoundingModes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};

template <typename T>
T ThroughVolatile(T value) {
  volatile T copy = value;
  return copy;
}

// f(operands...) evaluated in rounding mode `mode`. -frounding-math stops constant folding, but
// GCC may still move arithmetic across fesetround() (GCC bug 34678): operands and result pass
// through volatile variables, which pins the arithmetic between the mode switches.
template <typename F, typename... T>
auto InRounding(int mode, F f, T... operands) {
  int saved = std::fegetround();
  std::fesetround(mode);
  volatile auto result = f(ThroughVolatile(operands)...);
  std::fesetround(saved);
  return static_cast<decltype(f(operands...))>(result);
}

// PTX float-to-integer conversion: round with `mode`, NaN gives 0, out-of-range saturates.
template <typename I, typename F>
I SaturatingConvert(F x, int mode) {
  if (std::isnan(x)) return 0;
  F r = InRounding(mode, [](F v) { return std::nearbyint(v); }, x);
  if (r < static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}

// sign * [1, 2) * 2^e with e uniform in [min_exp, max_exp]: a spread of magnitudes.
template <typename T>
std::vector<T> SpreadFloats(size_t count, int min_exp, int max_exp, unsigned seed) {
  auto mantissa = Random<T>(count, T(1), T(2), seed);
  auto exponent = Random<int>(count, min_exp, max_exp, seed + 1);
  auto sign = Random<int>(count, 0, 1, seed + 2);
  std::vector<T> values(count);
  for (size_t i = 0; i < count; ++i) {
    values[i] = std::ldexp(sign[i] ? -mantissa[i] : mantissa[i], exponent[i]);
  }
  return values;
}

template <typename T>
constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
template <typename T>
constexpr T kInf = std::numeric_limits<T>::infinity();

// Flush-to-zero: subnormals become zeros of the same sign.
inline float Ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

}  // namespace tally::emu::conformance
