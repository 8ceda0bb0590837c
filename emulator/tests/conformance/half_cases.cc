// References for kernels/half.cu: bit-exact. Sums and products of f16/bf16 values in the
// inputs' range are exact in double, so rounding the double once gives the correctly rounded
// result.
#include <cmath>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

// Round to `bits` significant bits, ties to even (normal numbers only: inputs stay in range).
double RoundTo(double x, int bits) {
  if (x == 0) return x;
  int e;
  double m = std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
}
double Half(double x) { return RoundTo(x, 11); }
double Bf16(double x) { return RoundTo(x, 8); }

std::vector<Arg> Inputs(unsigned seed) {
  return {In(Random<float>(128, 0.25f, 30.0f, seed)), In(Random<float>(128, -30.0f, -0.25f, seed + 1)),
          In(Random<float>(128, 0.25f, 30.0f, seed + 2)), Out<float>(128 * 8)};
}

std::vector<Case> Cases() {
  return {
      {.kernel = "half_arith",
       .covers = "f16 add/sub/mul/fma, f16x2 fma, setp.f16, cvt f32<->f16",
       .grid = {2},
       .block = {64},
       .args = [] { return Inputs(190); },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1), c = in.Get<float>(2);
             std::vector<float> out;
             for (int i = 0; i < 128; ++i) {
               double x = Half(a[i]), y = Half(b[i]), z = Half(c[i]);
               out.insert(out.end(),
                          {float(x), float(Half(x + y)), float(Half(x - z)), float(Half(x * y)),
                           float(Half(x * y + z)), float(Half(x * z + x)), float(Half(y * x + y)),
                           x < y ? 1.0f : 0.0f});
             }
             e.Equal(3, out);
           }},
      {.kernel = "bf16_arith",
       .covers = "bf16 add/mul/fma, bf16x2 mul, cvt f32<->bf16",
       .grid = {2},
       .block = {64},
       .args = [] { return Inputs(193); },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1), c = in.Get<float>(2);
             std::vector<float> out(128 * 8);
             for (int i = 0; i < 128; ++i) {
               double x = Bf16(a[i]), y = Bf16(b[i]), z = Bf16(c[i]);
               float r[6] = {float(x), float(Bf16(x + y)), float(Bf16(x * y)),
                             float(Bf16(x * y + z)), float(Bf16(x * x)), float(Bf16(y * y))};
               std::copy(r, r + 6, out.begin() + i * 6);
             }
             e.Equal(3, out);
           }},
  };
}

}  // namespace

std::vector<Case> half_cases() { return Cases(); }

}  // namespace tally::emu::conformance
