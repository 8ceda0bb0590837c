// References for kernels/calls_advanced.cu: bit-exact.
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;

int Fibonacci(int n) { return n < 2 ? n : Fibonacci(n - 1) + Fibonacci(n - 2); }

std::vector<Case> Cases() {
  return {
      {.kernel = "warp_match",
       .covers = "match.any/.all .b32 .b64",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto v = Random<int>(128, 0, 5, 195);
             for (int i = 32; i < 64; ++i) v[i] = 0x100 | (v[i] & 1);  // all-equal bit 8 in warp 1
             return std::vector<Arg>{In(v), Out<u32>(128 * 3)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<u32> out;
             for (int i = 0; i < 128; ++i) {
               const int* w = &v[i & ~31];
               u32 same = 0, all_mask = 0xffffffffu;
               bool all = true;
               for (int k = 0; k < 32; ++k) {
                 same |= u32(w[k] == v[i]) << k;
                 all &= (w[k] & 0x100) == (w[0] & 0x100);
               }
               out.insert(out.end(), {same, same, all ? all_mask + 7u : 0u});
             }
             e.Equal(1, out);
           }},
      {.kernel = "jump_table",
       .covers = "brx.idx over .branchtargets, divergent targets",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<u32>(128, 0, 0xffffff, 196)), Out<u32>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<u32> out;
             for (u32 v : in.Get<u32>(0)) {
               u32 r[4] = {v + 11, v * 3, v ^ 0xff, v << 4};
               out.push_back(r[(v >> 8) & 3]);
             }
             e.Equal(1, out);
           }},
      {.kernel = "recursion",
       .covers = "recursive .func calls",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 0, 1000, 197)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int v : in.Get<int>(0)) out.push_back(Fibonacci(v & 15));
             e.Equal(1, out);
           }},
      {.kernel = "indirect_calls",
       .covers = "indirect calls (.callprototype) through device function pointers",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 0, 40000, 198)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int v : in.Get<int>(0)) {
               int r[3] = {2 * v, v * v, -v};
               out.push_back(r[unsigned(v) % 3]);
             }
             e.Equal(1, out);
           },
       .slice_refusal = "indirect call",
       .ptb_refusal = "indirect call"},
  };
}

}  // namespace

std::vector<Case> calls_advanced_cases() { return Cases(); }

}  // namespace tally::emu::conformance
