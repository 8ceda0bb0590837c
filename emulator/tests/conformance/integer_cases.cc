// References for kernels/integer.cu: every result bit-exact. PTX semantics that C++ leaves
// undefined (wrapping, shift amounts past the width) are computed in unsigned arithmetic.
#include <bit>
#include <climits>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;

constexpr int kN = 128;  // elements: 2 blocks of 64 threads

u32 Bfind(u32 x) { return x == 0 ? ~0u : 31u - std::countl_zero(x); }

// PTX ISA "bfe": fields past bit 31 read the sign bit (signed) or zero.
u32 Bfe(u32 a, u32 pos, u32 len, bool is_signed) {
  u32 sbit = (!is_signed || len == 0) ? 0 : (a >> std::min(pos + len - 1, 31u)) & 1;
  u32 d = 0;
  for (u32 i = 0; i <= 31; ++i) {
    u32 bit = (i < len && pos + i <= 31) ? (a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

u32 Bfi(u32 a, u32 b, u32 pos, u32 len) {
  u32 f = b;
  for (u32 i = 0; i < len && pos + i <= 31; ++i) {
    f = (f & ~(1u << (pos + i))) | (((a >> i) & 1) << (pos + i));
  }
  return f;
}

// prmt default mode: each selector nibble picks one of the 8 bytes of {b, a}; bit 3 of the
// nibble replicates that byte's sign bit instead.
u32 Prmt(u32 a, u32 b, u32 c) {
  u64 bytes = (u64{b} << 32) | a;
  u32 d = 0;
  for (int n = 0; n < 4; ++n) {
    u32 sel = (c >> (4 * n)) & 0xf;
    u32 byte = (bytes >> (8 * (sel & 7))) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << (8 * n);
  }
  return d;
}

u32 Lop3(u32 a, u32 b, u32 c, u32 lut) {
  u32 d = 0;
  for (int i = 0; i < 32; ++i) {
    u32 index = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1);
    d |= ((lut >> index) & 1) << i;
  }
  return d;
}

int32_t Low24(int32_t x) { return static_cast<int32_t>(static_cast<u32>(x) << 8) >> 8; }

std::vector<Case> Cases() {
  return {
      {.kernel = "int_arith32",
       .covers = "add/sub/mul .lo/.hi/.wide s32 u32",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 1), {INT_MIN, -1, INT_MAX, 0})),
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 2), {-1, INT_MIN, INT_MAX, 5})),
                 Out<int>(kN * 8)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               i64 wide = i64{a[i]} * b[i];
               u64 uwide = u64{u32(a[i])} * u32(b[i]);
               for (u32 v : {u32(a[i]) + u32(b[i]), u32(a[i]) - u32(b[i]), u32(a[i]) * u32(b[i]),
                             u32(wide >> 32), u32(uwide >> 32), u32(wide), u32(u64(wide) >> 32),
                             u32(uwide >> 32)}) {
                 out.push_back(int(v));
               }
             }
             e.Equal(2, out);
           }},
      {.kernel = "int_arith64",
       .covers = "add/sub/mul .lo/.hi s64 u64, mad",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{
                 In(WithEdges(Random<i64>(kN, LLONG_MIN, LLONG_MAX, 3), {LLONG_MIN, -1})),
                 In(WithEdges(Random<i64>(kN, LLONG_MIN, LLONG_MAX, 4), {-1, LLONG_MAX})),
                 Out<i64>(kN * 6)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<i64>(0), b = in.Get<i64>(1);
             std::vector<i64> out;
             for (int i = 0; i < kN; ++i) {
               u64 x = a[i], y = b[i];
               __int128 s = static_cast<__int128>(a[i]) * b[i];
               unsigned __int128 u = static_cast<unsigned __int128>(x) * y;
               for (u64 v : {x + y, x - y, x * y, u64(s >> 64), u64(u >> 64), x * 3 + (y >> 7)}) {
                 out.push_back(i64(v));
               }
             }
             e.Equal(2, out);
           }},
      {.kernel = "int_divrem",
       .covers = "div/rem s32 u32 s64 u64",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto b = Random<int>(kN, -300, 300, 6);
             auto d = Random<i64>(kN, -100000, 100000, 8);
             for (int& v : b) v = v == 0 ? 7 : v;
             for (i64& v : d) v = v == 0 ? -3 : v;
             b[1] = INT_MAX;
             d[1] = LLONG_MAX;
             return std::vector<Arg>{
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 5), {INT_MIN, -7})),
                 In(b),
                 In(WithEdges(Random<i64>(kN, LLONG_MIN, LLONG_MAX, 7), {LLONG_MIN, -9})),
                 In(d), Out<int>(kN * 4), Out<i64>(kN * 4)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1);
             auto c = in.Get<i64>(2), d = in.Get<i64>(3);
             std::vector<int> o32;
             std::vector<i64> o64;
             for (int i = 0; i < kN; ++i) {
               o32.insert(o32.end(), {a[i] / b[i], a[i] % b[i], int(u32(a[i]) / u32(b[i])),
                                      int(u32(a[i]) % u32(b[i]))});
               o64.insert(o64.end(), {c[i] / d[i], c[i] % d[i], i64(u64(c[i]) / u64(d[i])),
                                      i64(u64(c[i]) % u64(d[i]))});
             }
             e.Equal(4, o32);
             e.Equal(5, o64);
           }},
      {.kernel = "int_minmax",
       .covers = "min/max/abs/neg s32 u32 s64 u64",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 9), {INT_MIN, -1, 0})),
                 In(WithEdges(Random<int>(kN, INT_MIN, INT_MAX, 10), {5, 1, -1})),
                 In(WithEdges(Random<i64>(kN, -(1ll << 62), 1ll << 62, 11), {-5, 0})),
                 In(WithEdges(Random<i64>(kN, -(1ll << 62), 1ll << 62, 12), {3, -1})),
                 Out<int>(kN * 6), Out<i64>(kN * 5)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1);
             auto c = in.Get<i64>(2), d = in.Get<i64>(3);
             std::vector<int> o32;
             std::vector<i64> o64;
             for (int i = 0; i < kN; ++i) {
               u32 ux = a[i], uy = b[i];
               o32.insert(o32.end(),
                          {std::min(a[i], b[i]), std::max(a[i], b[i]), int(std::min(ux, uy)),
                           int(std::max(ux, uy)), int(a[i] < 0 ? 0u - ux : ux), int(0u - ux)});
               o64.insert(o64.end(), {std::min(c[i], d[i]), std::max(c[i], d[i]),
                                      i64(std::min(u64(c[i]), u64(d[i]))),
                                      i64(std::max(u64(c[i]), u64(d[i]))), c[i] < 0 ? -c[i] : c[i]});
             }
             e.Equal(4, o32);
             e.Equal(5, o64);
           }},
      {.kernel = "int_shifts",
       .covers = "shl/shr b32 u32 s32 b64 u64 s64, amounts past the width clamp",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(WithEdges(Random<u32>(kN, 0, ~0u, 13), {0x80000001u})),
                                     In(WithEdges(Random<u32>(kN, 0, 40, 14), {31, 32, 33, 0})),
                                     Out<u32>(kN * 3), Out<u64>(kN * 3)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), amount = in.Get<u32>(1);
             std::vector<u32> o32;
             std::vector<u64> o64;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i], n = std::min(amount[i], 32u);
               u64 w = (u64{x} << 32) | (x ^ 0x5a5a5a5au);
               u32 m = std::min(amount[i] * 2, 64u);
               o32.insert(o32.end(), {n == 32 ? 0u : x << n, n == 32 ? 0u : x >> n,
                                      u32(int32_t(x) >> std::min(n, 31u))});
               o64.insert(o64.end(), {m == 64 ? 0 : w << m, m == 64 ? 0 : w >> m,
                                      u64(int64_t(w) >> std::min(m, 63u))});
             }
             e.Equal(2, o32);
             e.Equal(3, o64);
           }},
      {.kernel = "int_bits",
       .covers = "popc/clz/brev/ffs 32+64 bit, bfind .u32 .s32 .shiftamt",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{
                 In(WithEdges(Random<u32>(kN, 0, ~0u, 15), {0, ~0u, 1, 0x80000000u, 0x7fffffffu})),
                 In(WithEdges(Random<u64>(kN, 0, ~0ull, 16), {0, ~0ull, 1ull << 63})),
                 Out<u32>(kN * 11)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0);
             auto b = in.Get<u64>(1);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i];
               u64 w = b[i], reversed = 0;
               for (int k = 0; k < 64; ++k) reversed |= ((w >> k) & 1) << (63 - k);
               u32 brev = 0;
               for (int k = 0; k < 32; ++k) brev |= ((x >> k) & 1) << (31 - k);
               u32 signed_find = Bfind(int32_t(x) < 0 ? ~x : x);
               out.insert(out.end(),
                          {u32(std::popcount(x)), u32(std::countl_zero(x)), brev,
                           x == 0 ? 0u : u32(std::countr_zero(x)) + 1, u32(std::popcount(w)),
                           u32(std::countl_zero(w)), u32(reversed >> 16),
                           w == 0 ? 0u : u32(std::countr_zero(w)) + 1, Bfind(x), signed_find,
                           x == 0 ? ~0u : u32(std::countl_zero(x))});
             }
             e.Equal(2, out);
           }},
      {.kernel = "int_bitfield",
       .covers = "bfe .u32 .s32, bfi, shf (funnel shifts .wrap .clamp)",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto c = Random<u32>(kN, 0, 0xffff, 19);
             for (u32& v : c) v = (v & 0xff) % 40 | (((v >> 8) % 40) << 8);
             c[0] = 0;
             c[1] = 31 | (8 << 8);
             c[2] = 0 | (32 << 8);
             return std::vector<Arg>{In(Random<u32>(kN, 0, ~0u, 17)),
                                     In(Random<u32>(kN, 0, ~0u, 18)), In(c), Out<u32>(kN * 7)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1), c = in.Get<u32>(2);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i], y = b[i], pos = c[i] & 0xff, len = (c[i] >> 8) & 0xff;
               u64 both = (u64{y} << 32) | x;
               u32 wrap = pos & 31, clamp = std::min(pos, 32u);
               out.insert(out.end(), {Bfe(x, pos, len, false), Bfe(x, pos, len, true),
                                      Bfi(x, y, pos, len), u32((both << wrap) >> 32),
                                      u32((both << clamp) >> 32), u32(both >> wrap),
                                      u32(both >> clamp)});
             }
             e.Equal(3, out);
           }},
      {.kernel = "int_logic",
       .covers = "prmt, and/or/xor/not, lop3, 64-bit logic",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<u32>(kN, 0, ~0u, 20)),
                                     In(Random<u32>(kN, 0, ~0u, 21)),
                                     In(Random<u32>(kN, 0, ~0u, 22)), Out<u32>(kN * 10)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1), c = in.Get<u32>(2);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i], y = b[i], z = c[i];
               u64 w = (u64{x} << 32) | y, v = (u64{z} << 32) | x;
               u64 r = (w & ~v) ^ (w | (v >> 3));
               out.insert(out.end(), {Prmt(x, y, z), x & y, x | ~y, x ^ y ^ z, Lop3(x, y, z, 0xca),
                                      Lop3(x, y, z, 0xe8), Lop3(x, y, z, 0x1e),
                                      Lop3(x, y, z, 0x6b), u32(r), u32(r >> 32)});
             }
             e.Equal(3, out);
           }},
      {.kernel = "int_carry",
       .covers = "add.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi (extended precision)",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto a = Random<u32>(kN * 3, 0, ~0u, 23), b = Random<u32>(kN * 3, 0, ~0u, 24);
             a[0] = a[1] = a[2] = ~0u;  // carries through every word
             b[0] = 1;
             return std::vector<Arg>{In(a), In(b), Out<u32>(kN * 10)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<u32>(0), b = in.Get<u32>(1);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               const u32* x = &a[i * 3];
               const u32* y = &b[i * 3];
               using u128 = unsigned __int128;
               u128 x96 = (u128{x[2]} << 64) | (u128{x[1]} << 32) | x[0];
               u128 y96 = (u128{y[2]} << 64) | (u128{y[1]} << 32) | y[0];
               u128 sum = x96 + y96, diff = x96 - y96;
               u128 product = u128((u64{x[1]} << 32) | x[0]) * ((u64{y[1]} << 32) | y[0]);
               for (int k = 0; k < 3; ++k) out.push_back(u32(sum >> (32 * k)));
               for (int k = 0; k < 3; ++k) out.push_back(u32(diff >> (32 * k)));
               for (int k = 0; k < 4; ++k) out.push_back(u32(product >> (32 * k)));
             }
             e.Equal(2, out);
           }},
      {.kernel = "int_narrow",
       .covers = "8/16-bit loads and stores (ld.s8/u8/s16/u16), sign/zero extension, cvt",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int8_t>(kN, -128, 127, 25)),
                                     In(Random<uint8_t>(kN, 0, 255, 26)),
                                     In(Random<int16_t>(kN, -32768, 32767, 27)),
                                     In(Random<uint16_t>(kN, 0, 65535, 28)), Out<int>(kN * 4),
                                     Out<int16_t>(kN), Out<uint8_t>(kN)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int8_t>(0);
             auto b = in.Get<uint8_t>(1);
             auto c = in.Get<int16_t>(2);
             auto d = in.Get<uint16_t>(3);
             std::vector<int> out;
             std::vector<int16_t> out16;
             std::vector<uint8_t> out8;
             for (int i = 0; i < kN; ++i) {
               out.insert(out.end(), {a[i] * b[i], c[i] + d[i], int16_t(c[i] * a[i]),
                                      uint16_t(d[i] * b[i] + c[i])});
               out16.push_back(int16_t(int16_t(c[i] >> 3) ^ int16_t(d[i])));
               out8.push_back(uint8_t(b[i] + a[i] * 3));
             }
             e.Equal(4, out);
             e.Equal(5, out16);
             e.Equal(6, out8);
           }},
      {.kernel = "int_sad_mul24",
       .covers = "sad s32 u32, mul24.lo (as nvcc expands it), hadd/rhadd",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, INT_MIN, INT_MAX, 29)),
                                     In(Random<int>(kN, INT_MIN, INT_MAX, 30)),
                                     In(Random<int>(kN, INT_MIN, INT_MAX, 31)), Out<int>(kN * 6)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1), c = in.Get<int>(2);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               u32 ux = a[i], uy = b[i], uz = c[i];
               u32 sad = (a[i] < b[i] ? uy - ux : ux - uy) + uz;
               u32 usad = (ux < uy ? uy - ux : ux - uy) + uz;
               i64 p = i64{Low24(a[i])} * Low24(b[i]);
               u64 up = u64{ux & 0xffffff} * (uy & 0xffffff);
               i64 sum = i64{a[i]} + b[i];
               out.insert(out.end(), {int(sad), int(usad), int(u32(p)), int(u32(up)),
                                      int(sum >> 1), int((sum + 1) >> 1)});
             }
             e.Equal(3, out);
           }},
      {.kernel = "int_compare",
       .covers = "setp eq/ne/lt/le/gt/ge/lo/ls/hi/hs on s32 u32 s64 u64, and/or/xor of predicates, "
                 "selp",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto a = Random<int>(kN, -4, 4, 32), b = Random<int>(kN, -4, 4, 33);
             auto c = Random<i64>(kN, -4, 4, 34), d = Random<i64>(kN, -4, 4, 35);
             return std::vector<Arg>{In(a), In(b), In(c), In(d), Out<u32>(kN * 2)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1);
             auto c = in.Get<i64>(2), d = in.Get<i64>(3);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               int x = a[i], y = b[i];
               u32 ux = x, uy = y;
               i64 p = c[i], q = d[i];
               u64 up = p, uq = q;
               bool bits[] = {x == y, x != y, x < y, x <= y, x > y, x >= y, ux < uy, ux <= uy,
                              ux > uy, ux >= uy, p == q, p != q, p < q, p <= q, p > q, p >= q,
                              up < uq, up <= uq, up > uq, up >= uq, x < y && p > q,
                              x < y || up < uq, (x > 0) != (p > 0)};
               u32 mask = 0;
               for (size_t k = 0; k < std::size(bits); ++k) mask |= u32(bits[k]) << k;
               out.push_back(mask);
               out.push_back(x > y ? ux * 3 : uy ^ 0xffu);
             }
             e.Equal(4, out);
           }},
  };
}

}  // namespace

std::vector<Case> integer_cases() { return Cases(); }

}  // namespace tally::emu::conformance
