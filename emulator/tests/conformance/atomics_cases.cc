// References for kernels/atomics.cu: final values are bit-exact (floating-point sums use exactly
// representable values, so their order does not matter); where the values returned depend on
// the order (exchange, tickets), the reference checks the multiset instead.
#include <algorithm>
#include <climits>
#include <numeric>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;

constexpr int kN = 256;  // 2 blocks of 128 threads

u32 Inc(u32 old, u32 limit) { return old >= limit ? 0 : old + 1; }
u32 Dec(u32 old, u32 limit) { return (old == 0 || old > limit) ? limit : old - 1; }
u32 Repeat(u32 value, int times, u32 (*op)(u32, u32), u32 limit) {
  for (int k = 0; k < times; ++k) value = op(value, limit);
  return value;
}

// `olds` plus the slot's final value are the initial value plus everything exchanged in.
template <typename T>
std::string CheckExchanged(const std::vector<T>& olds, T final_value, std::vector<T> all_in,
                           const char* what) {
  std::vector<T> seen = olds;
  seen.push_back(final_value);
  std::sort(seen.begin(), seen.end());
  std::sort(all_in.begin(), all_in.end());
  return seen == all_in ? "" : std::string(what) + ": returned and final values are not the "
                                                   "values exchanged in";
}

std::vector<Case> Cases() {
  return {
      {.kernel = "atomic_add_int",
       .covers = "atom.global.add .u32 .s32 .u64 across blocks",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, -100000, 100000, 100)), Out<int>(16),
                                     Out<u32>(1), Out<u64>(1)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> bins(16);
             u32 total = 0;
             u64 wide = 0;
             for (int v : in.Get<int>(0)) {
               ++bins[v & 15];
               total += u32(v);
               wide += u64(i64(v)) << 20;
             }
             e.Equal(1, bins);
             e.Equal(2, std::vector<u32>{total});
             e.Equal(3, std::vector<u64>{wide});
           }},
      {.kernel = "atomic_add_float",
       .covers = "atom.global.add .f32 .f64",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, -1000, 1000, 101)), Out<float>(4),
                                     Out<double>(2)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<float> f(4);
             std::vector<double> d(2);
             for (int v : in.Get<int>(0)) {
               f[v & 3] += v * 0.25f;
               d[v & 1] += v * 0.125;
             }
             e.Equal(1, f);
             e.Equal(2, d);
           }},
      {.kernel = "atomic_minmax",
       .covers = "atom.global.min/max .s32 .u32 .s64 .u64",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<i64>(kN, LLONG_MIN, LLONG_MAX, 102)),
                                     In(std::vector<int>{INT_MAX, INT_MIN}),
                                     In(std::vector<u32>{UINT_MAX, 0}),
                                     In(std::vector<i64>{LLONG_MAX, LLONG_MIN}),
                                     In(std::vector<u64>{ULLONG_MAX, 0})};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<i64>(0);
             auto i32 = [](i64 x) { return int(x); };
             std::vector<int> s32;
             std::vector<u32> w32;
             std::vector<u64> w64;
             std::transform(v.begin(), v.end(), std::back_inserter(s32), i32);
             for (i64 x : v) w32.push_back(u32(x)), w64.push_back(u64(x));
             e.Equal(1, std::vector<int>{*std::min_element(s32.begin(), s32.end()),
                                         *std::max_element(s32.begin(), s32.end())});
             e.Equal(2, std::vector<u32>{*std::min_element(w32.begin(), w32.end()),
                                         *std::max_element(w32.begin(), w32.end())});
             e.Equal(3, std::vector<i64>{*std::min_element(v.begin(), v.end()),
                                         *std::max_element(v.begin(), v.end())});
             e.Equal(4, std::vector<u64>{*std::min_element(w64.begin(), w64.end()),
                                         *std::max_element(w64.begin(), w64.end())});
           }},
      {.kernel = "atomic_bitwise",
       .covers = "atom.global.and/or/xor .b32 .b64",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<u64>(kN, 0, ULLONG_MAX, 103)),
                                     In(std::vector<u32>{~0u, 0, 0}),
                                     In(std::vector<u64>{~0ull, 0, 0})};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<u32> b32{~0u, 0, 0};
             std::vector<u64> b64{~0ull, 0, 0};
             for (u64 v : in.Get<u64>(0)) {
               b32[0] &= u32(v) | 0x01010101u;
               b32[1] |= u32(v) & 0x10101010u;
               b32[2] ^= u32(v >> 32);
               b64[0] &= v | 0x0f0f0f0f0f0f0f0full;
               b64[1] |= v & 0x1000100010001000ull;
               b64[2] ^= v;
             }
             e.Equal(1, b32);
             e.Equal(2, b64);
           }},
      {.kernel = "atomic_exchange",
       .covers = "atom.global.exch .b32 .b64 .f32 (returned values: a permutation)",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(std::vector<int>{-5}),   Out<int>(kN),
                                     In(std::vector<float>{-1}), Out<float>(kN),
                                     In(std::vector<u64>{7}),    Out<u64>(kN)};
           },
       .reference =
           [](const Values&, Expect& e) {
             e.Satisfies([](const Values& out) {
               std::vector<int> ints{-5};
               std::vector<float> floats{-1};
               std::vector<u64> wides{7};
               for (int i = 0; i < kN; ++i) {
                 ints.push_back(i + 1);
                 floats.push_back(i * 0.5f);
                 wides.push_back(u64(i) << 33);
               }
               return CheckExchanged(out.Get<int>(1), out.Scalar<int>(0), ints, "b32") +
                      CheckExchanged(out.Get<float>(3), out.Scalar<float>(2), floats, "f32") +
                      CheckExchanged(out.Get<u64>(5), out.Scalar<u64>(4), wides, "b64");
             });
           },
       .order_dependent = true},
      {.kernel = "atomic_cas",
       .covers = "atom.global.cas .b32 .b64 retry loops, atomicAdd return values as tickets",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             double lowest = -1e300;
             u64 bits;
             std::memcpy(&bits, &lowest, 8);
             return std::vector<Arg>{In(Random<int>(kN, -1000, 1000, 104)),
                                     In(std::vector<u32>{1}), In(std::vector<u64>{bits}),
                                     Out<u32>(kN), Out<u32>(1)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             u32 product = 1;
             double best = -1e300;
             for (int x : v) {
               product *= u32(2 * x + 1);
               best = std::max(best, x * 1.5);
             }
             u64 bits;
             std::memcpy(&bits, &best, 8);
             std::vector<u32> tickets(kN);
             std::iota(tickets.begin(), tickets.end(), 0u);
             e.Equal(1, std::vector<u32>{product});
             e.Equal(2, std::vector<u64>{bits});
             e.SameElements(3, tickets);
             e.Equal(4, std::vector<u32>{kN});
           },
       .order_dependent = true},
      {.kernel = "atomic_inc_dec",
       .covers = "atom.global.inc/dec with wrap-around",
       .grid = {2},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(std::vector<u32>{0, 3, 0xfffffff0u, 2000})}; },
       .reference =
           [](const Values&, Expect& e) {
             e.Equal(0, std::vector<u32>{Repeat(0, kN, Inc, 9), Repeat(3, kN, Dec, 5),
                                         Repeat(0xfffffff0u, kN, Inc, 0xffffffffu),
                                         Repeat(2000, kN, Dec, 1000)});
           }},
      {.kernel = "atomic_shared",
       .covers = "atom.shared add(.s32 .f32 .f64 .u64)/min/max/and/or/xor/inc/dec/cas/exch",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, -100000, 100000, 105)), Out<int>(18),
                                     Out<float>(2), Out<double>(2), Out<u64>(4)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             std::vector<float> f;
             std::vector<double> d;
             std::vector<u64> w;
             for (int b = 0; b < 2; ++b) {
               int s[6] = {0, 1 << 30, -(1 << 30), -1, 0, 0};
               float fs = 0;
               double ds = 0;
               u64 wide = 0;
               u32 product = 1;
               for (int t = 0; t < 128; ++t) {
                 int x = v[b * 128 + t];
                 s[0] += x;
                 s[1] = std::min(s[1], x);
                 s[2] = std::max(s[2], x);
                 s[3] &= x | 0x100;
                 s[4] |= x & 0x0f0;
                 s[5] ^= x;
                 product *= 3u;
                 fs += (x & 7) * 0.5f;
                 ds += x * 0.25;
                 wide += u64(x & 0xff) << 32;
               }
               out.insert(out.end(), s, s + 6);
               out.insert(out.end(), {int(Repeat(0, 128, Inc, 17)), int(Repeat(50, 128, Dec, 60)),
                                      int(product)});
               f.push_back(fs);
               d.push_back(ds);
               w.insert(w.end(), {wide, 0x1234567890ull + b});
             }
             e.Equal(1, out);
             e.Equal(2, f);
             e.Equal(3, d);
             e.Equal(4, w);
           }},
      {.kernel = "atomic_reductions",
       .covers = "red.global add(.s32 .f32 .f64 .u64)/min/max/and/or/xor/inc/dec",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, -100000, 100000, 106)),
                                     In(std::vector<int>{0, INT_MAX, INT_MIN}),
                                     In(std::vector<u32>{~0u, 0, 0, 0, 0}), Out<float>(1),
                                     Out<double>(1), Out<u64>(1)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> ints{0, INT_MAX, INT_MIN};
             std::vector<u32> uints{~0u, 0, 0, 0, 0};
             float f = 0;
             double d = 0;
             u64 w = 0;
             for (int v : in.Get<int>(0)) {
               ints[0] += v;
               ints[1] = std::min(ints[1], v);
               ints[2] = std::max(ints[2], v);
               uints[0] &= u32(v) | 0xff00ffu;
               uints[1] |= u32(v) & 0x00f000u;
               uints[2] ^= u32(v);
               uints[3] = Inc(uints[3], 100);
               uints[4] = Dec(uints[4], 100);
               f += (v & 15) * 0.25f;
               d += v * 0.5;
               w += u32(v);
             }
             e.Equal(1, ints);
             e.Equal(2, uints);
             e.Equal(3, std::vector<float>{f});
             e.Equal(4, std::vector<double>{d});
             e.Equal(5, std::vector<u64>{w});
           }},
      {.kernel = "atomic_scopes",
       .covers = "atom .cta/.sys scopes (atomicAdd_block/_system ...), atom.cas.b16",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, -100000, 100000, 107)),
                                     In(std::vector<int>{0, INT_MIN, 0, 0, 0}),
                                     In(std::vector<uint16_t>{65000})};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out{0, INT_MIN, 0, 0, 0};
             uint16_t half = 65000;
             for (int i = 0; i < kN; ++i) {
               out[0] += v[i];
               out[1] = std::max(out[1], v[i]);
               out[2] |= 1 << (v[i] & 15);
               out[3 + i / 128] += v[i];
               half = uint16_t(half + (v[i] & 3));
             }
             e.Equal(1, out);
             e.Equal(2, std::vector<uint16_t>{half});
           }},
      {.kernel = "atomic_memory_order",
       .covers = "atom .acquire/.release/.acq_rel/.relaxed with .cta/.gpu/.sys, red.release, "
                 "ld.acquire, st.release, fence.acq_rel/.sc",
       .grid = {1},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(128, 0, 100000, 108)), Out<u32>(5),
                                     Out<int>(384)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<u32> c(5);
             std::vector<int> out(384);
             int i = 0;
             for (int x : in.Get<int>(0)) {
               u32 v = x;
               c[0] += v;
               c[1] = std::max(c[1], v);
               c[2] |= v & 0xf0f0u;
               c[3] ^= v;
               c[4] += v & 0xff;
               out[i] = int(v * 3);
               out[128 + i] = int(v * 3 + 1);
               ++i;
             }
             e.Equal(1, c);
             e.Equal(2, out);
           }},
      {.kernel = "acquire_release_polling",
       .covers = "st.release / ld.acquire message passing between warps (polling loop)",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(64, -1000, 1000, 109)), Out<int>(64),
                                     Out<u32>(2)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int v : in.Get<int>(0)) out.push_back(v * 7 + 1);
             e.Equal(1, out);
             e.Equal(2, std::vector<u32>{1, 1});
           }},
  };
}

}  // namespace

std::vector<Case> atomics_cases() { return Cases(); }

}  // namespace tally::emu::conformance
