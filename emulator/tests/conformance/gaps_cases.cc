// References for kernels/gaps.cu, written from the PTX ISA's descriptions of dp4a, dp2a, mul24,
// mad24 and the SIMD video instructions, element by element.
#include <algorithm>
#include <climits>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;
using i64 = int64_t;

constexpr int kN = 128;

// Lane k of `bits` bits of v, sign-extended or not.
i64 Lane(u32 v, int k, int bits, bool is_signed) {
  u32 raw = (v >> (k * bits)) & ((1u << bits) - 1);
  if (is_signed && (raw >> (bits - 1)) != 0) return i64(raw) - (i64{1} << bits);
  return raw;
}

// dp4a.{atype}.{btype} and dp2a.{lo,hi}.{atype}.{btype}: c plus the products, mod 2^32.
u32 Dp4a(u32 a, u32 b, u32 c, bool sa, bool sb) {
  i64 sum = c;
  for (int k = 0; k < 4; ++k) sum += Lane(a, k, 8, sa) * Lane(b, k, 8, sb);
  return u32(sum);
}
u32 Dp2a(u32 a, u32 b, u32 c, bool hi, bool sa, bool sb) {
  i64 sum = c;
  for (int k = 0; k < 2; ++k) sum += Lane(a, k, 16, sa) * Lane(b, (hi ? 2 : 0) + k, 8, sb);
  return u32(sum);
}

// The 48-bit product of the low 24 bits; .hi is bits 47..16.
u32 Mul24(u32 a, u32 b, bool hi, bool is_signed) {
  i64 product = Lane(a, 0, 24, is_signed) * Lane(b, 0, 24, is_signed);
  return u32(hi ? product >> 16 : product);
}

enum class V { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax };

// vop4/vop2 d, a, b, c with types d.a.b, .sat and .add (mask and selectors at their defaults).
u32 Video(V op, int lanes, bool sd, bool sa, bool sb, bool sat, bool add, u32 a, u32 b, u32 c) {
  int bits = 32 / lanes;
  i64 sum = c;
  u32 merged = 0;
  for (int k = 0; k < lanes; ++k) {
    i64 x = Lane(a, k, bits, sa), y = Lane(b, k, bits, sb), t = 0;
    if (op == V::kAdd) t = x + y;
    if (op == V::kSub) t = x - y;
    if (op == V::kAvrg) t = (x + y >= 0) ? (x + y + 1) / 2 : -((-(x + y) + 1) / 2);
    if (op == V::kAbsdiff) t = x > y ? x - y : y - x;
    if (op == V::kMin) t = std::min(x, y);
    if (op == V::kMax) t = std::max(x, y);
    if (sat) {
      i64 lo = sd ? -(i64{1} << (bits - 1)) : 0;
      i64 hi = sd ? (i64{1} << (bits - 1)) - 1 : (i64{1} << bits) - 1;
      t = std::clamp(t, lo, hi);
    }
    sum += t;
    merged |= (u32(t) & ((1u << bits) - 1)) << (k * bits);
  }
  return add ? u32(sum) : merged;
}

// a, b, c with byte and halfword extremes first, and the results' buffer.
std::vector<Arg> ThreeInputs(unsigned seed, size_t outputs) {
  auto random = [&](unsigned s) { return Random<int>(kN, INT_MIN, INT_MAX, s); };
  return {In(WithEdges(random(seed), {0, -1, INT_MIN, INT_MAX, 0x7f7f7f7f, int(0x80808080),
                                      0x00ff00ff, 0x01010101})),
          In(WithEdges(random(seed + 1), {-1, 0, INT_MAX, INT_MIN, int(0x80808080), 0x7f7f7f7f,
                                          int(0xff00ff00), -2})),
          In(WithEdges(random(seed + 2), {INT_MAX, INT_MIN, 0, -1})), Out<int>(kN * outputs)};
}

std::vector<Case> Cases() {
  return {
      {.kernel = "int_dot",
       .covers = "dp4a and dp2a .lo/.hi, every .u32/.s32 combination",
       .grid = {2},
       .block = {64},
       .args = [] { return ThreeInputs(36, 10); },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1), c = in.Get<u32>(2);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               out.insert(out.end(), {Dp4a(a[i], b[i], c[i], true, true),
                                      Dp4a(a[i], b[i], c[i], false, false),
                                      Dp4a(a[i], b[i], c[i], false, true),
                                      Dp4a(a[i], b[i], c[i], true, false),
                                      Dp2a(a[i], b[i], c[i], false, true, true),
                                      Dp2a(a[i], b[i], c[i], true, true, true),
                                      Dp2a(a[i], b[i], c[i], false, false, false),
                                      Dp2a(a[i], b[i], c[i], true, false, false),
                                      Dp2a(a[i], b[i], c[i], false, false, true),
                                      Dp2a(a[i], b[i], c[i], true, true, false)});
             }
             e.Equal(3, out);
           }},
      {.kernel = "int_mul24",
       .covers = "mul24 and mad24 .lo/.hi .s32/.u32, mad24.hi.sat.s32",
       .grid = {2},
       .block = {64},
       .args = [] { return ThreeInputs(40, 9); },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1), c = in.Get<u32>(2);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               i64 hi_sum = i64(int32_t(Mul24(a[i], b[i], true, true))) + int32_t(c[i]);
               out.insert(out.end(), {Mul24(a[i], b[i], false, true), Mul24(a[i], b[i], true, true),
                                      Mul24(a[i], b[i], false, false),
                                      Mul24(a[i], b[i], true, false),
                                      Mul24(a[i], b[i], false, true) + c[i],
                                      Mul24(a[i], b[i], true, true) + c[i],
                                      Mul24(a[i], b[i], false, false) + c[i],
                                      Mul24(a[i], b[i], true, false) + c[i],
                                      u32(std::clamp<i64>(hi_sum, INT_MIN, INT_MAX))});
             }
             e.Equal(3, out);
           }},
      {.kernel = "video_simd",
       .covers = "vabsdiff4/2 (as nvcc emits __vabsdiff/__vsad), vadd/vsub/vavrg/vmin/vmax 4 and "
                 "2 with .sat, .add and mixed signedness",
       .grid = {2},
       .block = {64},
       .args = [] { return ThreeInputs(44, 16); },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1), c = in.Get<u32>(2);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i], y = b[i], z = c[i];
               out.insert(
                   out.end(),
                   {Video(V::kAbsdiff, 4, false, false, false, false, false, x, y, 0),
                    Video(V::kAbsdiff, 4, false, true, true, false, false, x, y, 0),
                    Video(V::kAbsdiff, 4, false, false, false, false, true, x, y, 0),
                    Video(V::kAbsdiff, 2, false, false, false, false, true, x, y, 0),
                    Video(V::kAdd, 4, false, false, false, true, false, x, y, z),
                    Video(V::kSub, 4, true, true, true, true, false, x, y, z),
                    Video(V::kAvrg, 4, true, true, true, false, false, x, y, z),
                    Video(V::kAvrg, 4, false, false, false, false, false, x, y, z),
                    Video(V::kMin, 4, true, true, true, false, false, x, y, z),
                    Video(V::kMax, 4, false, false, false, false, true, x, y, z),
                    Video(V::kAdd, 4, true, false, true, true, false, x, y, z),
                    Video(V::kAdd, 2, true, true, true, true, false, x, y, z),
                    Video(V::kSub, 2, false, false, false, false, false, x, y, z),
                    Video(V::kAbsdiff, 2, true, true, true, false, true, x, y, z),
                    Video(V::kMax, 2, true, true, true, false, false, x, y, z),
                    Video(V::kAvrg, 2, true, false, true, false, false, x, y, z)});
             }
             e.Equal(3, out);
           }},
      {.kernel = "shared_address_wrap",
       .covers = "32-bit shared addresses wrap around (register + offset)",
       .grid = {1},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 39)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(128);
             for (int t = 0; t < 128; ++t) out[t] = t < 64 ? v[63 - t] + 1 : (v[191 - t] + 1) * 2;
             e.Equal(1, out);
           }},
      {.kernel = "shared_in_function",
       .covers = ".shared variable declared inside a .func",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 38)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(128);
             for (int i = 0; i < 128; ++i) out[i] = v[i / 64 * 64 + 63 - i % 64] * 3;
             e.Equal(1, out);
           },
       // The PTB form needs every barrier in the kernel body (unify_sync).
       .ptb_refusal = "barrier in called function"},
      {.kernel = "module_shared_in_function",
       .covers = "module-scope .shared variable named inside a .func",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 37)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(128);
             for (int i = 0; i < 128; ++i) out[i] = (v[i / 64 * 64 + 63 - i % 64] + v[i]) * 3;
             e.Equal(1, out);
           },
       // The PTB form needs every barrier in the kernel body (unify_sync).
       .ptb_refusal = "barrier in called function"},
  };
}

}  // namespace

std::vector<Case> gaps_cases() { return Cases(); }

}  // namespace tally::emu::conformance
