// References for kernels/gaps.cu: instructions the emulator does not implement yet.
#include <climits>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;

constexpr int kN = 128;

int32_t Low24(int32_t x) { return static_cast<int32_t>(static_cast<u32>(x) << 8) >> 8; }

std::vector<Case> Cases() {
  return {
      {.kernel = "int_dot",
       .covers = "dp4a .s32 .u32, dp2a .lo .hi, mul24.hi",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, INT_MIN, INT_MAX, 36)),
                                     In(Random<int>(kN, INT_MIN, INT_MAX, 37)),
                                     In(Random<int>(kN, -100000, 100000, 38)), Out<int>(kN * 5)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1), c = in.Get<int>(2);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               u32 x = a[i], y = b[i], z = c[i];
               auto sbyte = [](u32 v, int k) { return int(int8_t(v >> (8 * k))); };
               auto ubyte = [](u32 v, int k) { return u32(uint8_t(v >> (8 * k))); };
               auto half = [](u32 v, int k) { return int(int16_t(v >> (16 * k))); };
               u32 dp = z, udp = z;
               for (int k = 0; k < 4; ++k) {
                 dp += u32(sbyte(x, k) * sbyte(y, k));
                 udp += ubyte(x, k) * ubyte(y, k);
               }
               u32 lo = z + u32(half(x, 0) * sbyte(y, 0)) + u32(half(x, 1) * sbyte(y, 1));
               u32 hi = z + u32(half(x, 0) * sbyte(y, 2)) + u32(half(x, 1) * sbyte(y, 3));
               i64 p = i64{Low24(a[i])} * Low24(b[i]);
               out.insert(out.end(), {int(dp), int(udp), int(lo), int(hi), int(u32(u64(p) >> 16))});
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
           }},
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
           }},
  };
}

}  // namespace

std::vector<Case> gaps_cases() { return Cases(); }

}  // namespace tally::emu::conformance
