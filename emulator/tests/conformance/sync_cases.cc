// References for kernels/sync.cu: every result bit-exact.
#include <algorithm>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

// The kernels' block-local results in block order.
std::vector<Case> Cases() {
  return {
      {.kernel = "sync_tree_reduce",
       .covers = "bar.sync in a loop (shared-memory tree reduction)",
       .grid = {4},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(512, -10000, 10000, 120)), Out<int>(4)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(4);
             for (int i = 0; i < 512; ++i) out[i / 128] += v[i];
             e.Equal(1, out);
           }},
      {.kernel = "sync_tiled_matmul",
       .covers = "nested loops with barriers (tiled matrix multiply), 2-D grid and blocks",
       .grid = {2, 2},
       .block = {8, 8},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(256, -50, 50, 121)),
                                     In(Random<int>(256, -50, 50, 122)), Out<int>(256), Value(16)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto a = in.Get<int>(0), b = in.Get<int>(1);
             std::vector<int> c(256);
             for (int r = 0; r < 16; ++r)
               for (int col = 0; col < 16; ++col)
                 for (int k = 0; k < 16; ++k) c[r * 16 + col] += a[r * 16 + k] * b[k * 16 + col];
             e.Equal(2, c);
           }},
      {.kernel = "sync_bitonic_sort",
       .covers = "barriers in doubly nested loops, predicated swaps (bitonic sort)",
       .grid = {2},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 123)), Out<int>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::sort(v.begin(), v.begin() + 128);
             std::sort(v.begin() + 128, v.end());
             e.Equal(1, v);
           }},
      {.kernel = "sync_barrier_forms",
       .covers = "bar.sync 0, barrier.sync 0, barrier.sync.aligned 0, bar.sync 3 (no count)",
       .grid = {3},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(192, -1000, 1000, 124)), Out<int>(192)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(192);
             for (int b = 0; b < 3; ++b) {
               const int* s = &v[b * 64];
               int a[64], c[64], d[64];
               for (int t = 0; t < 64; ++t) a[t] = s[63 - t] * 3;
               for (int t = 0; t < 64; ++t) c[t] = a[(t + 5) % 64] - t;
               for (int t = 0; t < 64; ++t) d[t] = c[(t + 17) % 64];
               std::copy(d, d + 64, out.begin() + b * 64);
             }
             e.Equal(1, out);
           }},
      {.kernel = "sync_barrier_counts",
       .covers = "bar.sync / barrier.sync with thread counts (named partial-CTA barriers)",
       .grid = {2},
       .block = {128},
       .args = [] { return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 125)), Out<int>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(256);
             for (int b = 0; b < 2; ++b)
               for (int t = 0; t < 128; ++t) {
                 out[b * 128 + t] = t < 64 ? v[b * 128 + 63 - t] + 1
                                           : (v[b * 128 + 64 + ((t + 7) & 63)] + 1) * 2;
               }
             e.Equal(1, out);
           },
       .ptb_refusal = "with a thread count"},
      {.kernel = "sync_reductions",
       .covers = "bar.red.popc/.and/.or (__syncthreads_count/and/or), after early exits",
       .grid = {3},
       .block = {96},
       .args =
           [] {
             auto v = Random<int>(288, -1000, 1000, 126);
             for (int i = 96; i < 192; ++i) v[i] = std::clamp(v[i], -800, 980);  // block 1: no "any"
             v[200] = -950;  // block 2: not "all"
             return std::vector<Arg>{In(v), Out<int>(288)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(288);
             for (int b = 0; b < 3; ++b) {
               int count = 0, all = 1, any = 0, late = 0;
               for (int t = 0; t < 96; ++t) {
                 int x = v[b * 96 + t];
                 count += x > 0;
                 all &= x > -900;
                 any |= x > 990;
                 if (t < 80) late += x & 1;
               }
               for (int t = 0; t < 80; ++t) {
                 out[b * 96 + t] = count * 1000 + all * 100 + any * 10 + (late & 7) + (late >> 3) * 10000;
               }
             }
             e.Equal(1, out);
           }},
      {.kernel = "sync_producer_consumer",
       .covers = "bar.arrive + bar.sync with counts: named-barrier producer/consumer rounds",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(2 * 3 * 64, -1000, 1000, 127)),
                                     Out<int>(2 * 3 * 64), Value(3)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(384);
             for (int b = 0; b < 2; ++b)
               for (int r = 0; r < 3; ++r)
                 for (int k = 0; k < 64; ++k) {
                   int base = (b * 3 + r) * 64;
                   out[base + k] = v[base + 63 - k] * (r + 1) + r;
                 }
             e.Equal(1, out);
           },
       .ptb_refusal = "with a thread count"},
      {.kernel = "sync_early_exit",
       .covers = "divergent early return before barriers (exited threads count as arrived)",
       .grid = {4},
       .block = {96},
       .args =
           [] {
             auto v = Random<int>(384, -1000, 1000, 128);
             for (int i = 96; i < 128; ++i) v[i] = 5 * i;  // a whole warp exits in block 1
             return std::vector<Arg>{In(v), Out<int>(384)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(384);
             for (int i = 0; i < 384; ++i) {
               if (v[i] % 5 == 0) continue;
               bool has_left = i % 96 > 0 && v[i - 1] % 5 != 0;
               out[i] = has_left ? v[i] + v[i - 1] : v[i];
             }
             e.Equal(1, out);
           }},
      {.kernel = "sync_uniform_branches",
       .covers = "barriers in block-uniform branches that differ between blocks",
       .grid = {6},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(384, -1000, 1000, 129)), Out<int>(384)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(384);
             for (int b = 0; b < 6; ++b) {
               int* o = &out[b * 64];
               const int* x = &v[b * 64];
               if (b % 3 == 0) {
                 for (int t = 0; t < 64; ++t) o[t] = x[63 - t];
               } else if (b % 3 == 1) {
                 std::vector<int> cur(x, x + 64), s(64);
                 for (int k = 0; k < 3; ++k) {
                   for (int t = 0; t < 64; ++t) s[t] = cur[t] + k;
                   for (int t = 0; t < 64; ++t) cur[t] += s[(t + 1) % 64];
                 }
                 std::copy(cur.begin(), cur.end(), o);
               } else {
                 for (int t = 0; t < 64; ++t) o[t] = -x[t];
               }
             }
             e.Equal(1, out);
           }},
      {.kernel = "sync_fences",
       .covers = "membar.cta/.gl/.sys, fence.sc.gpu, fence.acq_rel.sys",
       .grid = {2},
       .block = {128},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 130)), Out<int>(768),
                                     Out<int>(256)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(256), scratch(768);
             for (int i = 0; i < 256; ++i) {
               scratch[i] = v[i] * 2;
               scratch[256 + i] = v[i] + 7;
               scratch[512 + i] = v[i] - 3;
             }
             for (int i = 0; i < 256; ++i) {
               int base = i / 128 * 128, t = i % 128;
               out[i] = scratch[base + (t + 1) % 128] + scratch[256 + base + (t + 2) % 128] +
                        scratch[512 + base + (t + 3) % 128];
             }
             e.Equal(1, scratch);
             e.Equal(2, out);
           }},
      {.kernel = "sync_warp_masks",
       .covers = "bar.warp.sync (__syncwarp) with partial masks in divergent branches",
       .grid = {1},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(64, -1000, 1000, 131)), Out<int>(64)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(64);
             for (int t = 0; t < 64; ++t) {
               int lane = t & 31, group = t & ~15;
               out[t] = lane < 16 ? v[t] + v[group + ((lane + 1) & 15)] * 2
                                  : v[t] ^ (v[group + ((lane + 3) & 15)] - 1);
             }
             e.Equal(1, out);
           }},
      {.kernel = "divergent_control_flow",
       .covers = "divergence within warps: per-lane loops with break/continue, switch, nested "
                 "branches, reconvergence before vote.ballot",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -200, 200, 132)), Out<int>(256)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> acc(128), out(256);
             for (int t = 0; t < 128; ++t) {
               int x = v[t], a = 0;
               for (int i = 0; i < (x & 15); ++i) {
                 if ((i ^ x) & 1) continue;
                 if (i * x > 200) break;
                 switch ((x + i) & 3) {
                   case 0: a += i; break;
                   case 1: a -= 2 * i; break;
                   case 2: a ^= x; break;
                   default: a += 7;
                 }
                 if (x & 16) {
                   for (int j = 0; j < (x >> 5 & 3); ++j) a += j * i;
                 } else if (x & 32) {
                   a *= 3;
                 }
               }
               acc[t] = a;
             }
             for (int t = 0; t < 128; ++t) {
               uint32_t ballot = 0;
               for (int l = 0; l < 32; ++l) ballot |= uint32_t(acc[(t & ~31) + l] > 0) << l;
               out[t * 2] = acc[t];
               out[t * 2 + 1] = int(ballot);
             }
             e.Equal(1, out);
           }},
      {.kernel = "sync_stencil_3d",
       .covers = "3-D grid and 3-D blocks, barriers in nested loops (iterated stencil)",
       .grid = {2, 2, 2},
       .block = {8, 4, 4},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(1024, -1000, 1000, 133)), Out<int>(1024),
                                     Value(3)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(1024);
             for (int b = 0; b < 8; ++b) {
               auto at = [](int z, int y, int x) { return x + 8 * (y + 4 * z); };
               std::vector<int> cur(v.begin() + b * 128, v.begin() + (b + 1) * 128), next(128);
               for (int s = 0; s < 3; ++s)
                 for (int half = 0; half < 2; ++half) {
                   for (int z = 0; z < 4; ++z)
                     for (int y = 0; y < 4; ++y)
                       for (int x = 0; x < 8; ++x) {
                         int sum = cur[at(z, y, x)] * 2 + cur[at(z, y, (x + 1) % 8)] +
                                   cur[at(z, (y + 1) % 4, x)] - cur[at((z + 1) % 4, y, x)];
                         next[at(z, y, x)] = sum / 2 + half;
                       }
                   std::swap(cur, next);
                 }
               std::copy(cur.begin(), cur.end(), out.begin() + b * 128);
             }
             e.Equal(1, out);
           }},
  };
}

}  // namespace

std::vector<Case> sync_cases() { return Cases(); }

}  // namespace tally::emu::conformance
