// References for kernels/convert.cu: conversions are bit-exact, rounding modes included (the
// host converts in the same mode: IEEE 754 conversions are exactly specified).
#include <climits>

#include "emulator/tests/conformance/float_util.h"
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using i64 = int64_t;
using u64 = uint64_t;
using u32 = uint32_t;

constexpr int kN = 128;

template <typename T>
T Clamp(i64 v, i64 lo, i64 hi) {
  return static_cast<T>(std::clamp(v, lo, hi));
}

std::vector<float> FloatsForIntegers() {
  auto values = SpreadFloats<float>(kN, -2, 66, 40);
  auto small = Random<float>(kN / 2, -300.0f, 300.0f, 41);
  std::copy(small.begin(), small.end(), values.begin());
  return WithEdges(values, {kNaN<float>, kInf<float>, -kInf<float>, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f,
                            3e9f, -3e9f, 1e19f, -1e19f, 4294967296.0f, -0.0f, 2147483520.0f});
}

std::vector<double> DoublesForIntegers() {
  auto values = SpreadFloats<double>(kN, -2, 66, 42);
  auto small = Random<double>(kN / 2, -1e5, 1e5, 43);
  std::copy(small.begin(), small.end(), values.begin());
  return WithEdges(values, {kNaN<double>, -kInf<double>, 2.5, -3.5, 4294967295.5, -2147483648.5,
                            2147483647.5, 9.3e18, -9.3e18, 1.8e19});
}

std::vector<Case> Cases() {
  return {
      {.kernel = "cvt_int_int",
       .covers = "cvt between s8/u8/s16/u16/s32/u32/s64/u64, .sat",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto values = Random<i64>(kN, LLONG_MIN, LLONG_MAX, 44);
             auto small = Random<i64>(kN / 2, -70000, 70000, 45);
             auto mid = Random<i64>(kN / 4, -(1ll << 33), 1ll << 33, 46);
             std::copy(small.begin(), small.end(), values.begin());
             std::copy(mid.begin(), mid.end(), values.begin() + kN / 2);
             return std::vector<Arg>{In(WithEdges(values, {-129, 128, 255, 256, -1, INT_MIN})),
                                     Out<int>(kN * 14)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (i64 w : in.Get<i64>(0)) {
               int x = static_cast<int>(w);
               out.insert(out.end(),
                          {int8_t(x), uint8_t(x), int16_t(x), uint16_t(x), int(w >> 32),
                           int((u64(u32(x))) >> 3), Clamp<int>(x, -128, 127), Clamp<int>(x, 0, 255),
                           Clamp<int>(x, -32768, 32767), Clamp<int>(x, 0, 65535),
                           Clamp<int>(w, INT_MIN, INT_MAX), int(Clamp<u32>(w, 0, UINT_MAX)),
                           int(Clamp<u32>(x, 0, INT_MAX)), Clamp<int>(u32(x), 0, INT_MAX)});
             }
             e.Equal(1, out);
           }},
      {.kernel = "cvt_float_to_int",
       .covers = "cvt.{rni,rzi,rmi,rpi}.{s32,u32,s64,u64}.{f32,f64}: saturation, NaN -> 0",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(FloatsForIntegers()), In(DoublesForIntegers()),
                                     Out<int>(kN * 12), Out<i64>(kN * 8)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0);
             auto b = in.Get<double>(1);
             std::vector<int> o32;
             std::vector<i64> o64;
             const int rn = FE_TONEAREST, rz = FE_TOWARDZERO, rd = FE_DOWNWARD, ru = FE_UPWARD;
             for (int i = 0; i < kN; ++i) {
               float x = a[i];
               double d = b[i];
               for (int mode : kRoundingModes) o32.push_back(SaturatingConvert<int>(x, mode));
               for (int mode : kRoundingModes) o32.push_back(int(SaturatingConvert<u32>(x, mode)));
               o32.insert(o32.end(),
                          {SaturatingConvert<int>(d, rn), SaturatingConvert<int>(d, rz),
                           SaturatingConvert<int>(d, rd), int(SaturatingConvert<u32>(d, ru))});
               o64.insert(o64.end(),
                          {SaturatingConvert<i64>(x, rn), SaturatingConvert<i64>(x, rz),
                           SaturatingConvert<i64>(x, rd), i64(SaturatingConvert<u64>(x, ru)),
                           SaturatingConvert<i64>(d, rn), SaturatingConvert<i64>(d, rz),
                           SaturatingConvert<i64>(d, ru), i64(SaturatingConvert<u64>(d, rd))});
             }
             e.Equal(2, o32);
             e.Equal(3, o64);
           }},
      {.kernel = "cvt_int_to_float",
       .covers = "cvt.{rn,rz,rm,rp}.{f32,f64}.{s32,u32,s64,u64}",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 47), {INT_MIN, INT_MAX, -1, 0})),
                 In(WithEdges(Random<i64>(kN, LLONG_MIN, LLONG_MAX, 48),
                              {LLONG_MIN, LLONG_MAX, -1, (1ll << 53) + 1})),
                 Out<float>(kN * 16), Out<double>(kN * 6)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0);
             auto b = in.Get<i64>(1);
             std::vector<float> out;
             std::vector<double> dout;
             for (int i = 0; i < kN; ++i) {
               int x = a[i];
               i64 w = b[i];
               for (int m : kRoundingModes) out.push_back(InRounding(m, [](int v) { return float(v); }, x));
               for (int m : kRoundingModes) {
                 out.push_back(InRounding(m, [](u32 v) { return float(v); }, u32(x)));
               }
               for (int m : kRoundingModes) out.push_back(InRounding(m, [](i64 v) { return float(v); }, w));
               for (int m : kRoundingModes) {
                 out.push_back(InRounding(m, [](u64 v) { return float(v); }, u64(w)));
               }
               dout.push_back(double(x));
               for (int m : kRoundingModes) {
                 dout.push_back(InRounding(m, [](i64 v) { return double(v); }, w));
               }
               dout.push_back(InRounding(FE_TOWARDZERO, [](u64 v) { return double(v); }, u64(w)));
             }
             e.Equal(2, out);
             e.Equal(3, dout);
           }},
      {.kernel = "cvt_float_float",
       .covers = "cvt.{rn,rz,rm,rp}.f32.f64, cvt.f64.f32, cvt.{rni,rzi,rmi,rpi} f32 f64",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto values = SpreadFloats<double>(kN, -160, 140, 49);
             auto small = Random<double>(kN / 2, -50.0, 50.0, 50);
             std::copy(small.begin(), small.end(), values.begin() + kN / 4);
             return std::vector<Arg>{
                 In(WithEdges(values, {kNaN<double>, kInf<double>, -kInf<double>, 2.5, -2.5, 0.5,
                                       -0.0, 1e-310, 3.5e38, -1e39, 1.0 + 0x1p-24})),
                 Out<float>(kN * 8), Out<double>(kN * 5)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<float> out;
             std::vector<double> dout;
             for (double d : in.Get<double>(0)) {
               for (int m : kRoundingModes) out.push_back(InRounding(m, [](double v) { return float(v); }, d));
               float x = float(d);
               out.insert(out.end(), {std::rint(x), std::trunc(x), std::floor(x), std::ceil(x)});
               dout.insert(dout.end(),
                           {double(x), std::rint(d), std::trunc(d), std::floor(d), std::ceil(d)});
             }
             e.Equal(1, out);
             e.Equal(2, dout);
           }},
      {.kernel = "float_sat_ftz",
       .covers = "cvt.sat.f32 (__saturatef), add/mul/fma .sat, add/mul .ftz, cvt.ftz.f64.f32",
       .grid = {1},
       .block = {96},
       .args =
           [] {
             auto a = Random<float>(96, -2.0f, 2.0f, 51), b = Random<float>(96, -2.0f, 2.0f, 52);
             a = WithEdges(a, {kNaN<float>, 1e-40f, -3e-39f, 1e-38f, 0.75f, 2e-20f, -kInf<float>});
             b = WithEdges(b, {0.5f, 1e-40f, 2e-39f, -0.5f, kNaN<float>, 3e-20f, 1.0f});
             return std::vector<Arg>{In(a), In(b), Out<float>(96 * 6), Out<double>(96)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1);
             auto sat = [](float v) { return std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 1.0f); };
             std::vector<float> out;
             std::vector<double> dout;
             for (int i = 0; i < 96; ++i) {
               float x = a[i], y = b[i];
               out.insert(out.end(), {sat(x), sat(x + y), sat(x * y), sat(std::fma(x, y, x)),
                                      Ftz(Ftz(x) + Ftz(y)), Ftz(Ftz(x) * Ftz(y))});
               dout.push_back(double(Ftz(x)));
             }
             e.Equal(2, out);
             e.Equal(3, dout);
           }},
      {.kernel = "float_compare",
       .covers = "setp.{eq,ne,lt,le,gt,ge,equ,neu,ltu,leu,gtu,geu,num,nan}.{f32,f64}, testp "
                 "(isnan/isinf/isfinite/signbit), selp.f32",
       .grid = {1},
       .block = {128},
       .args =
           [] {
             const float f[] = {kNaN<float>, kInf<float>, -kInf<float>, 0.0f, -0.0f, 1.0f, -1.0f,
                                2.5f};
             const double d[] = {kNaN<double>, 1.0, -0.0, 0.0, 3.0};
             auto pick_f = Random<int>(128, 0, 7, 53), pick_g = Random<int>(128, 0, 7, 54);
             auto pick_p = Random<int>(128, 0, 4, 55), pick_q = Random<int>(128, 0, 4, 56);
             std::vector<float> x, y;
             std::vector<double> p, q;
             for (int i = 0; i < 128; ++i) {
               x.push_back(f[pick_f[i]]);
               y.push_back(f[pick_g[i]]);
               p.push_back(d[pick_p[i]]);
               q.push_back(d[pick_q[i]]);
             }
             return std::vector<Arg>{In(x), In(y), In(p), In(q), Out<u32>(128), Out<float>(128)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<float>(0), b = in.Get<float>(1);
             auto c = in.Get<double>(2), d = in.Get<double>(3);
             std::vector<u32> out;
             std::vector<float> fout;
             for (int i = 0; i < 128; ++i) {
               float x = a[i], y = b[i];
               double p = c[i], q = d[i];
               bool unordered = std::isnan(x) || std::isnan(y);
               bool bits[] = {x == y, !unordered && x != y, x < y, x <= y, x > y, x >= y,
                              unordered || x == y, x != y, unordered || x < y,
                              unordered || x <= y, unordered || x > y, unordered || x >= y,
                              !unordered, unordered, p < q, p >= q, !(p < q), p != q,
                              std::isnan(x), std::isinf(x), std::isfinite(p), std::signbit(x)};
               u32 mask = 0;
               for (size_t k = 0; k < std::size(bits); ++k) mask |= u32(bits[k]) << k;
               out.push_back(mask);
               fout.push_back(x < y ? y : x * 0.5f);
             }
             e.Equal(4, out);
             e.Equal(5, fout);
           }},
  };
}

}  // namespace

std::vector<Case> convert_cases() { return Cases(); }

}  // namespace tally::emu::conformance
