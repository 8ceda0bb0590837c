// References for kernels/calls_advanced.cu: bit-exact.
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;

int Fibonacci(int n) { return n < 2 ? n : Fibonacci(n - 1) + Fibonacci(n - 2); }

int TreeWalk(const std::vector<int>& values, int node, int count, int* path, int depth) {
  int own[8];
  for (int i = 0; i < 8; ++i) own[i] = values[node] * (i + 1);
  path[depth] = values[node];
  int sum = 0;
  for (int d = 0; d <= depth; ++d) sum += path[d];
  int left = 2 * node + 1, right = 2 * node + 2;
  if (left < count) sum += TreeWalk(values, left, count, path, depth + 1);
  if (right < count) sum += TreeWalk(values, right, count, path, depth + 1);
  return sum + own[(node + depth) & 7];
}

u32 Odd(int n, u32 acc);
u32 Even(int n, u32 acc) { return n == 0 ? acc : Odd(n - 1, acc * 3 + 1); }
u32 Odd(int n, u32 acc) { return n == 0 ? 0u - acc : Even(n - 1, acc ^ (u32(n) << 2)); }

// virtual_calls: Area() and Scaled(k) of the shape the lane picks.
std::pair<int, int> Shape(int v) {
  int k = v & 3;
  switch ((v >> 6) & 3) {
    case 0:
      return {0, 0};
    case 1: {
      int a = v & 31;
      return {a * a, k * a * a};
    }
    case 2: {
      int area = (v & 7) * ((v >> 3) & 7);
      return {area, area + k};
    }
    default: {
      int area = ((v >> 2) & 15) * 5 / 2;
      return {area, area + k};
    }
  }
}

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
      {.kernel = "tree_walk",
       .covers = "recursion to per-lane depths, per-activation local arrays, pointers into an "
                 "outer frame",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(63, -100, 100, 199)), Value<int>(63),
                                     Out<int>(128)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto values = in.Get<int>(0);
             int count = in.Scalar<int>(1);
             std::vector<int> out;
             for (int i = 0; i < 128; ++i) {
               int path[16];
               out.push_back(TreeWalk(values, i % count, count, path, 0));
             }
             e.Equal(2, out);
           }},
      {.kernel = "mutual_recursion",
       .covers = "mutual recursion with per-lane depths",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 0, 1 << 20, 200)), Out<u32>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<u32> out;
             for (int v : in.Get<int>(0)) out.push_back((v & 1) ? Odd(v % 41, v) : Even(v % 37, v));
             e.Equal(1, out);
           }},
      {.kernel = "pointer_table",
       .covers = "a device function-pointer table in a .global initializer, indexed per lane",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 0, 40000, 201)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < 128; ++i) {
               int r[4] = {v[i] + i, v[i] - i, v[i] * i, v[i] ^ i};
               out.push_back(r[(v[i] >> 4) & 3]);
             }
             e.Equal(1, out);
           },
       .slice_refusal = "indirect call",
       .ptb_refusal = "indirect call"},
      {.kernel = "virtual_calls",
       .covers = "virtual functions of a class hierarchy (vtables naming methods), divergent",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 0, 40000, 202)), Out<int>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int v : in.Get<int>(0)) {
               auto [area, scaled] = Shape(v);
               out.insert(out.end(), {area, scaled});
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
