// References for kernels/tensor_core.cu: CPU matrix products. Inputs are small integers (or
// multiples of 1/64), so every product and partial sum is exact in f32 whatever the order of
// accumulation, and the results are compared bit-exactly.
#include <cmath>
#include <cstring>
#include <functional>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

// IEEE binary16 bits of v, a multiple of 1/64 with |v| < 2048 (exact).
uint16_t HalfBits(double v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  if (e <= -14) return static_cast<uint16_t>(sign | static_cast<unsigned>(std::ldexp(std::fabs(v), 24)));
  return static_cast<uint16_t>(sign | ((e + 14) << 10) |
                               (static_cast<unsigned>(std::ldexp(m, 11)) & 0x3ff));
}
double HalfValue(uint16_t bits) {
  int e = (bits >> 10) & 0x1f;
  double m = bits & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(m + 1024, e - 25);
  return bits & 0x8000 ? -v : v;
}
// bfloat16: the high half of the f32 (exact for small integers).
uint16_t Bf16Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}
double Bf16Value(uint16_t bits) {
  uint32_t wide = uint32_t{bits} << 16;
  float v;
  std::memcpy(&v, &wide, 4);
  return v;
}

using Element = std::function<double(int row, int col)>;
// D = A * B + C (m x n, row-major), in double: exact for these inputs.
std::vector<double> MatMul(int m, int n, int k, Element a, Element b, Element c) {
  std::vector<double> d(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = c(i, j);
      for (int x = 0; x < k; ++x) sum += a(i, x) * b(x, j);
      d[i * n + j] = sum;
    }
  return d;
}

std::vector<uint16_t> RandomHalves(size_t count, int lo, int hi, unsigned seed, double scale = 1) {
  std::vector<uint16_t> bits;
  for (int v : Random<int>(count, lo, hi, seed)) bits.push_back(HalfBits(v * scale));
  return bits;
}
template <typename T>
std::vector<T> RandomValues(size_t count, int lo, int hi, unsigned seed) {
  std::vector<T> values;
  for (int v : Random<int>(count, lo, hi, seed)) values.push_back(static_cast<T>(v));
  return values;
}

// wmma with A, B, C (f16) and D at one leading dimension kLd: A and B in the kernel's layouts,
// C row-major, D column-major (f32 or f16); untouched D elements stay 0.
constexpr int kLd = 40;
Case WmmaStrided(const char* kernel, int m, int n, int k, bool a_col, bool b_col, bool d_half) {
  return {.kernel = kernel,
          .covers = "wmma.load/mma/store with strides, col/row layouts, f16 accumulators",
          .grid = {1},
          .block = {32},
          .args =
              [d_half] {
                std::vector<Arg> args = {In(RandomHalves(kLd * kLd, -4, 4, 210)),
                                         In(RandomHalves(kLd * kLd, -4, 4, 211)),
                                         In(RandomHalves(kLd * kLd, -64, 64, 212)),
                                         d_half ? Out<uint16_t>(kLd * kLd)
                                                : Out<float>(kLd * kLd),
                                         Value<unsigned>(kLd)};
                return args;
              },
          .reference =
              [=](const Values& in, Expect& e) {
                auto a = in.Get<uint16_t>(0), b = in.Get<uint16_t>(1), c = in.Get<uint16_t>(2);
                auto at = [](const std::vector<uint16_t>& v, int r, int col, bool col_major) {
                  return HalfValue(v[col_major ? col * kLd + r : r * kLd + col]);
                };
                std::vector<double> d = MatMul(
                    m, n, k, [&](int r, int x) { return at(a, r, x, a_col); },
                    [&](int x, int col) { return at(b, x, col, b_col); },
                    [&](int r, int col) { return at(c, r, col, false); });
                std::vector<float> out(kLd * kLd, 0.0f);
                std::vector<uint16_t> out_half(kLd * kLd, 0);
                for (int r = 0; r < m; ++r)
                  for (int col = 0; col < n; ++col) {
                    out[col * kLd + r] = static_cast<float>(d[r * n + col]);
                    out_half[col * kLd + r] = HalfBits(d[r * n + col]);
                  }
                if (d_half) {
                  e.Equal(3, out_half);
                } else {
                  e.Equal(3, out);
                }
              }};
}

// mma.sync on row-major A (m x k), B (k x n), C and D (m x n), with element codecs.
template <typename TIn, typename TAcc>
Case Mma(const char* kernel, const char* covers, int m, int n, int k,
         std::function<std::vector<TIn>(size_t, unsigned)> inputs,
         std::function<std::vector<TAcc>(size_t, unsigned)> accumulators,
         std::function<double(TIn)> in_value, std::function<double(TAcc)> acc_value,
         std::function<TAcc(double)> result) {
  return {.kernel = kernel,
          .covers = covers,
          .grid = {1},
          .block = {32},
          .args =
              [=] {
                return std::vector<Arg>{In(inputs(m * k, 220)), In(inputs(k * n, 221)),
                                        In(accumulators(m * n, 222)), Out<TAcc>(m * n)};
              },
          .reference =
              [=](const Values& in, Expect& e) {
                auto a = in.Get<TIn>(0), b = in.Get<TIn>(1);
                auto c = in.Get<TAcc>(2);
                std::vector<double> d = MatMul(
                    m, n, k, [&](int r, int x) { return in_value(a[r * k + x]); },
                    [&](int x, int col) { return in_value(b[x * n + col]); },
                    [&](int r, int col) { return acc_value(c[r * n + col]); });
                std::vector<TAcc> out;
                for (double v : d) out.push_back(result(v));
                e.Equal(3, out);
              }};
}

// s8 x (s8 or u8) m16n8k32: B's bytes are read as unsigned when `b_unsigned`; with
// `satfinite` C starts near the s32 limits so that some sums leave the range and clamp.
Case MmaInt8(const char* kernel, bool b_unsigned, bool satfinite) {
  return {.kernel = kernel,
          .covers = satfinite ? "mma.sync m16n8k32 .s8 .satfinite (clamped sums)"
                              : "mma.sync m16n8k32 .s8 x .u8 -> .s32",
          .grid = {1},
          .block = {32},
          .args =
              [=] {
                std::vector<int> c = Random<int>(128, -100000, 100000, 232);
                if (satfinite) {
                  for (size_t i = 0; i < c.size(); i += 2) {
                    c[i] = (i % 4 == 0 ? INT32_MAX : INT32_MIN) - (i % 4 == 0 ? 100 : -100);
                  }
                }
                return std::vector<Arg>{In(RandomValues<int8_t>(16 * 32, -128, 127, 230)),
                                        In(RandomValues<int8_t>(32 * 8, -128, 127, 231)), In(c),
                                        Out<int>(128)};
              },
          .reference =
              [=](const Values& in, Expect& e) {
                auto a = in.Get<int8_t>(0), b = in.Get<int8_t>(1);
                auto c = in.Get<int>(2);
                std::vector<int> d(128);
                for (int r = 0; r < 16; ++r)
                  for (int col = 0; col < 8; ++col) {
                    int64_t sum = c[r * 8 + col];
                    for (int x = 0; x < 32; ++x) {
                      int64_t bv = b_unsigned ? static_cast<uint8_t>(b[x * 8 + col]) : b[x * 8 + col];
                      sum += int64_t{a[r * 32 + x]} * bv;
                    }
                    if (satfinite) sum = std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX);
                    d[r * 8 + col] = static_cast<int>(sum);
                  }
                e.Equal(3, d);
              }};
}

// ldmatrix: lane L supplies the address of stored row (5 L) mod 32, so row r of matrix j is
// stored row (5 (8 j + r)) mod 32; lane l receives row l / 4, columns 2 (l % 4) and the next
// (transposed: the same of the transposed matrix) in register j.
Case Ldmatrix(const char* kernel, int count, bool trans) {
  return {.kernel = kernel,
          .covers = "ldmatrix.m8n8 .x1/.x2/.x4 (.trans): fragment layout and per-lane row addresses",
          .grid = {1},
          .block = {32},
          .args =
              [] {
                return std::vector<Arg>{In(RandomValues<uint16_t>(256, 0, 65535, 240)),
                                        Out<uint32_t>(128)};
              },
          .reference =
              [=](const Values& in, Expect& e) {
                auto rows = in.Get<uint16_t>(0);
                auto element = [&](int j, int r, int c) {
                  return uint32_t{rows[(5 * (8 * j + r) % 32) * 8 + c]};
                };
                std::vector<uint32_t> out(128, 0);
                for (int l = 0; l < 32; ++l)
                  for (int j = 0; j < count; ++j) {
                    int g = l / 4, t = l % 4;
                    out[4 * l + j] = trans ? element(j, 2 * t, g) | element(j, 2 * t + 1, g) << 16
                                           : element(j, g, 2 * t) | element(j, g, 2 * t + 1) << 16;
                  }
                e.Equal(1, out);
              }};
}

std::vector<Case> Cases() {
  auto halves = [](size_t count, unsigned seed) { return RandomHalves(count, -64, 64, seed, 1 / 64.0); };
  auto small_halves = [](size_t count, unsigned seed) { return RandomHalves(count, -4, 4, seed); };
  auto floats = [](size_t count, unsigned seed) { return RandomValues<float>(count, -100, 100, seed); };
  auto small_floats = [](size_t count, unsigned seed) { return RandomValues<float>(count, -8, 8, seed); };
  auto doubles = [](size_t count, unsigned seed) { return RandomValues<double>(count, -8, 8, seed); };
  auto bf16s = [](size_t count, unsigned seed) {
    std::vector<uint16_t> bits;
    for (float v : RandomValues<float>(count, -16, 16, seed)) bits.push_back(Bf16Bits(v));
    return bits;
  };
  auto as_double = [](auto v) { return static_cast<double>(v); };
  return {
      {.kernel = "wmma_16x16x16",
       .covers = "wmma.load/mma/store (m16n16k16, f16 x f16 + f32)",
       .grid = {2},
       .block = {32},
       .args =
           [] {
             std::vector<float> c;
             for (int v : Random<int>(512, -100, 100, 202)) c.push_back(float(v));
             return std::vector<Arg>{In(RandomHalves(512, -8, 8, 200)),
                                     In(RandomHalves(512, -8, 8, 201)), In(c), Out<float>(512)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<uint16_t>(0), b = in.Get<uint16_t>(1);
             auto c = in.Get<float>(2);
             std::vector<float> d;
             for (int t = 0; t < 2; ++t) {
               const int o = t * 256;
               for (double v : MatMul(
                        16, 16, 16, [&](int r, int x) { return HalfValue(a[o + r * 16 + x]); },
                        [&](int x, int col) { return HalfValue(b[o + col * 16 + x]); },
                        [&](int r, int col) { return double{c[o + r * 16 + col]}; })) {
                 d.push_back(static_cast<float>(v));
               }
             }
             e.Equal(3, d);
           }},
      WmmaStrided("wmma_m32n8k16_col_row", 32, 8, 16, true, false, false),
      WmmaStrided("wmma_m8n32k16_row_row", 8, 32, 16, false, false, true),
      WmmaStrided("wmma_m16n16k16_col_col", 16, 16, 16, true, true, true),
      {.kernel = "wmma_shared_k32",
       .covers = "wmma.load/store .shared, two k steps, fill_fragment, element-wise fragment ops",
       .grid = {1},
       .block = {32},
       .args =
           [] {
             return std::vector<Arg>{In(RandomHalves(512, -8, 8, 203)),
                                     In(RandomHalves(512, -8, 8, 204)), Out<float>(256)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<uint16_t>(0), b = in.Get<uint16_t>(1);
             std::vector<float> d;
             for (double v : MatMul(
                      16, 16, 32, [&](int r, int x) { return HalfValue(a[r * 32 + x]); },
                      [&](int x, int col) { return HalfValue(b[x * 16 + col]); },
                      [](int, int) { return 0.5; })) {
               d.push_back(static_cast<float>(2 * v));
             }
             e.Equal(2, d);
           }},
      Mma<uint16_t, float>("mma_m16n8k16_f16", "mma.sync m16n8k16 .f16 -> .f32", 16, 8, 16, halves,
                           floats, HalfValue, as_double, [](double v) { return float(v); }),
      Mma<uint16_t, float>("mma_m16n8k16_bf16", "mma.sync m16n8k16 .bf16 -> .f32", 16, 8, 16,
                           bf16s, floats, Bf16Value, as_double,
                           [](double v) { return float(v); }),
      Mma<uint16_t, uint16_t>("mma_m16n8k8_f16_f16acc", "mma.sync m16n8k8 .f16 with .f16 C/D", 16,
                              8, 8, small_halves, small_halves, HalfValue, HalfValue, HalfBits),
      Mma<float, float>("mma_m16n8k8_tf32", "mma.sync m16n8k8 .tf32 -> .f32", 16, 8, 8,
                        small_floats, floats, as_double, as_double,
                        [](double v) { return float(v); }),
      Mma<double, double>("mma_m8n8k4_f64", "mma.sync m8n8k4 .f64", 8, 8, 4, doubles, doubles,
                          as_double, as_double, [](double v) { return v; }),
      MmaInt8("mma_m16n8k32_s8_u8", true, false),
      MmaInt8("mma_m16n8k32_s8_satfinite", false, true),
      Ldmatrix("ldmatrix_x1", 1, false),
      Ldmatrix("ldmatrix_x2", 2, false),
      Ldmatrix("ldmatrix_x4", 4, false),
      Ldmatrix("ldmatrix_x4_trans", 4, true),
      {.kernel = "movmatrix_trans",
       .covers = "movmatrix.m8n8.trans.b16",
       .grid = {1},
       .block = {32},
       .args =
           [] {
             return std::vector<Arg>{In(Random<uint32_t>(32, 0, 0xffffffffu, 250)),
                                     Out<uint32_t>(32)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto regs = in.Get<uint32_t>(0);
             auto element = [&](int r, int c) { return (regs[r * 4 + c / 2] >> (16 * (c % 2))) & 0xffff; };
             std::vector<uint32_t> out;
             for (int l = 0; l < 32; ++l) {
               int g = l / 4, t = l % 4;
               out.push_back(element(2 * t, g) | element(2 * t + 1, g) << 16);
             }
             e.Equal(1, out);
           }},
  };
}

}  // namespace

std::vector<Case> tensor_core_cases() { return Cases(); }

}  // namespace tally::emu::conformance
