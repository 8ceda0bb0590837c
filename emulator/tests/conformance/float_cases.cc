// References for kernels/float.cu. Correctly rounded operations (add/sub/mul/fma/div/rcp/sqrt
// in every rounding mode, IEEE special values, explicit fma chains) are bit-exact against the
// host's IEEE arithmetic in the same mode. Approximate instructions and the math library are
// checked within the bounds given per case (PTX ISA and CUDA Programming Guide, "Mathematical
// Functions" appendix), against double-precision (or glibc) values.
#include "emulator/tests/conformance/float_util.h"
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

constexpr int kN = 128;

// 7 correctly rounded operations x 4 rounding modes, in the kernels' order.
template <typename T>
std::vector<T> RoundedOps(const std::vector<T>& a, const std::vector<T>& b,
                          const std::vector<T>& c) {
  std::vector<T> out;
  for (size_t i = 0; i < a.size(); ++i) {
    T x = a[i], y = b[i], z = c[i], m = std::fabs(c[i]);
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T u, T v) { return u + v; }, x, y));
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T u, T v) { return u - v; }, x, z));
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T u, T v) { return u * v; }, x, y));
    for (int r : kRoundingModes) {
      out.push_back(InRounding(r, [](T u, T v, T w) { return std::fma(u, v, w); }, x, y, z));
    }
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T u, T v) { return u / v; }, x, y));
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T v) { return T(1) / v; }, y));
    for (int r : kRoundingModes) out.push_back(InRounding(r, [](T v) { return std::sqrt(v); }, m));
  }
  return out;
}

template <typename T>
std::vector<T> Specials(size_t count, unsigned seed) {
  const T values[] = {kNaN<T>, kInf<T>, -kInf<T>, T(0), -T(0), T(1), T(-2.5),
                      std::numeric_limits<T>::denorm_min() * 3, std::numeric_limits<T>::max()};
  std::vector<T> out;
  for (int pick : Random<int>(count, 0, std::size(values) - 1, seed)) out.push_back(values[pick]);
  return out;
}

std::vector<Case> Cases() {
  return {
      {.kernel = "f32_rounding",
       .covers = "add/sub/mul/fma/div/rcp/sqrt .f32 with .rn .rz .rm .rp (bit-exact)",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto a = WithEdges(SpreadFloats<float>(kN, -30, 30, 60), {1e-39f, 3e38f, 1.0f});
             auto b = WithEdges(SpreadFloats<float>(kN, -30, 30, 61), {3.0f, 3e38f, 0x1p-24f});
             auto c = WithEdges(SpreadFloats<float>(kN, -30, 30, 62), {-1e-39f, -3e38f, 1.0f});
             return std::vector<Arg>{In(a), In(b), In(c), Out<float>(kN * 28)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             e.Equal(3, RoundedOps(in.Get<float>(0), in.Get<float>(1), in.Get<float>(2)));
           }},
      {.kernel = "f64_rounding",
       .covers = "add/sub/mul/fma/div/rcp/sqrt .f64 with .rn .rz .rm .rp (bit-exact)",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto a = WithEdges(SpreadFloats<double>(kN, -100, 100, 63), {1e-310, 1e308, 1.0});
             auto b = WithEdges(SpreadFloats<double>(kN, -100, 100, 64), {3.0, 1e308, 0x1p-53});
             auto c = WithEdges(SpreadFloats<double>(kN, -100, 100, 65), {-1e-310, -1e308, 1.0});
             return std::vector<Arg>{In(a), In(b), In(c), Out<double>(kN * 28)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             e.Equal(3, RoundedOps(in.Get<double>(0), in.Get<double>(1), in.Get<double>(2)));
           }},
      {.kernel = "float_ieee_special",
       .covers = "min/max/abs/neg/copysign/div/sqrt .f32 .f64 on NaN, infinities, zeros, "
                 "subnormals (bit-exact; min/max of +0 and -0 may return either)",
       .grid = {1},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Specials<float>(128, 66)), In(Specials<float>(128, 67)),
                                     In(Specials<double>(128, 68)), In(Specials<double>(128, 69)),
                                     Out<float>(256), Out<float>(128 * 6), Out<double>(256),
                                     Out<double>(128 * 5)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1);
             auto c = in.Get<double>(2), d = in.Get<double>(3);
             std::vector<float> minmax, out;
             std::vector<double> dminmax, dout;
             for (int i = 0; i < 128; ++i) {
               float x = a[i], y = b[i];
               double p = c[i], q = d[i];
               minmax.insert(minmax.end(), {std::fmin(x, y), std::fmax(x, y)});
               out.insert(out.end(), {std::fabs(x), -x, std::copysign(x, y), x / y, std::sqrt(x),
                                      x * y + 1.0f});
               dminmax.insert(dminmax.end(), {std::fmin(p, q), std::fmax(p, q)});
               dout.insert(dout.end(), {std::fabs(p), -p, std::copysign(p, q), p / q, std::sqrt(p)});
             }
             e.Near(4, minmax, 0.0);
             e.Equal(5, out);
             e.Near(6, dminmax, 0.0);
             e.Equal(7, dout);
           }},
      {.kernel = "f32_approx",
       .covers = "ex2/lg2/sin/cos/rcp/sqrt/rsqrt/tanh .approx.f32, __expf/__logf/__sinf/__cosf/"
                 "__fdividef/rsqrtf: relative 2e-6 (tanh 1e-3), absolute 2e-6 for lg2/sin/cos",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<float>(kN, -3.0f, 3.0f, 70)),
                                     In(Random<float>(kN, 0.25f, 8.0f, 71)), Out<float>(kN * 14)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1);
             // Bounds {relative, absolute} per result (PTX ISA: ex2 2^-22 relative, lg2 2^-22
             // absolute, sin/cos 2^-20.5 absolute on [-pi, pi], rcp/sqrt/rsqrt about 1 ulp, tanh
             // 2^-10.987 relative; the Programming Guide for the intrinsics).
             std::vector<std::pair<double, double>> bounds = {
                 {2e-6, 0}, {2e-6, 2e-6}, {0, 2e-6}, {0, 2e-6}, {2e-6, 0}, {2e-6, 0},    {2e-6, 0},
                 {1e-3, 1e-6}, {2e-6, 0}, {2e-6, 2e-6}, {0, 2e-6}, {0, 2e-6}, {2e-6, 1e-7}, {2e-6, 0}};
             std::vector<float> expected;
             for (int i = 0; i < kN; ++i) {
               double x = a[i], y = b[i];
               for (double v : {std::exp2(x), std::log2(y), std::sin(x), std::cos(x), 1 / y,
                                std::sqrt(y), 1 / std::sqrt(y), std::tanh(x), std::exp(x),
                                std::log(y), std::sin(x), std::cos(x), x / y, 1 / std::sqrt(y)}) {
                 expected.push_back(float(v));
               }
             }
             e.NearColumns(2, expected, bounds);
           }},
      {.kernel = "f64_approx",
       .covers = "rcp.approx.ftz.f64, rsqrt.approx.f64: relative 1e-5 (the ISA gives no bound; "
                 "GPUs deliver about 2^-23)",
       .grid = {1},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(SpreadFloats<double>(128, -60, 60, 72)),
                                            Out<double>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<double> out;
             for (double x : in.Get<double>(0)) {
               out.push_back(1 / x);
               out.push_back(x < 0 ? kNaN<double> : 1 / std::sqrt(x));
             }
             e.Near(1, out, 1e-5);
           }},
      {.kernel = "f32_math",
       .covers = "CUDA math library, f32 (expf logf sinf cosf tanf powf tanhf erff atan2f cbrtf "
                 "log1pf exp2f log2f log10f): relative 2e-6, absolute 2e-6",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<float>(kN, -4.0f, 4.0f, 73)),
                                     In(Random<float>(kN, 0.1f, 10.0f, 74)), Out<float>(kN * 12)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1);
             std::vector<float> out;
             for (int i = 0; i < kN; ++i) {
               float x = a[i], y = b[i];
               double dx = x, dy = y;
               double values[] = {std::exp(dx),
                                  std::log(dy),
                                  std::sin(double(x * 10.0f)),
                                  std::cos(double(x * 10.0f)),
                                  std::tan(double(x * 0.3f)),
                                  std::pow(dy, dx),
                                  std::tanh(dx),
                                  std::erf(dx),
                                  std::atan2(dx, double(y - 5.0f)),
                                  std::cbrt(dx),
                                  std::log1p(dy),
                                  std::exp2(dx) + std::log2(dy) + std::log10(dy)};
               for (double v : values) out.push_back(float(v));
             }
             e.Near(2, out, 2e-6, 2e-6);
           }},
      {.kernel = "f64_math",
       .covers = "CUDA math library, f64 (exp log sin cos tan pow tanh erf atan2 cbrt log1p "
                 "exp2 log2 log10): relative 1e-14, absolute 1e-14",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<double>(kN, -4.0, 4.0, 75)),
                                     In(Random<double>(kN, 0.1, 10.0, 76)), Out<double>(kN * 12)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<double>(0), b = in.Get<double>(1);
             std::vector<double> out;
             for (int i = 0; i < kN; ++i) {
               double x = a[i], y = b[i];
               out.insert(out.end(), {std::exp(x), std::log(y), std::sin(x * 10.0),
                                      std::cos(x * 10.0), std::tan(x * 0.3), std::pow(y, x),
                                      std::tanh(x), std::erf(x), std::atan2(x, y - 5.0),
                                      std::cbrt(x), std::log1p(y),
                                      std::exp2(x) + std::log2(y) + std::log10(y)});
             }
             e.Near(2, out, 1e-14, 1e-14);
           }},
      {.kernel = "float_fma_chain",
       .covers = "fma.rn.f32/.f64 chains in loops (Horner, Newton): bit-exact",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<float>(kN, -4.0f, 4.0f, 77)),
                                     In(Random<double>(kN, -2.0, 2.0, 78)), Out<float>(kN * 2),
                                     Out<double>(kN)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             const float cf[6] = {0.5f, -1.25f, 3.0f, 0.125f, -2.0f, 1.0f};
             std::vector<float> out;
             std::vector<double> dout;
             auto b = in.Get<double>(1);
             int i = 0;
             for (float x : in.Get<float>(0)) {
               float h = cf[0];
               for (int k = 1; k < 6; ++k) h = std::fma(h, x, cf[k]);
               float r = 0.25f, den = 2.0f + std::fabs(x);
               for (int k = 0; k < 6; ++k) r = std::fma(r, std::fma(-den, r, 1.0f), r);
               out.insert(out.end(), {h, r});
               double g = 0.0;
               for (int k = 0; k < 8; ++k) g = std::fma(g, b[i], double(k + 1) * 0.25);
               dout.push_back(g);
               ++i;
             }
             e.Equal(2, out);
             e.Equal(3, dout);
           }},
  };
}

}  // namespace

std::vector<Case> float_cases() { return Cases(); }

}  // namespace tally::emu::conformance
