// References for kernels/warp.cu (CUDA Programming Guide, "Warp Shuffle Functions", "Warp Vote
// Functions", "Warp Reduce Functions"): every result bit-exact.
#include <algorithm>
#include <climits>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;

constexpr int kN = 128;

// The value lane `lane` of a warp reads with each shuffle kind inside segments of `width`.
template <typename T>
T ShflIdx(const T* warp, int lane, int src, int width) {
  return warp[(lane / width) * width + (src % width)];
}
template <typename T>
T ShflUp(const T* warp, int lane, int delta, int width) {
  return (lane % width) < delta ? warp[lane] : warp[lane - delta];
}
template <typename T>
T ShflDown(const T* warp, int lane, int delta, int width) {
  return (lane % width) + delta >= width ? warp[lane] : warp[lane + delta];
}

std::vector<Case> Cases() {
  return {
      {.kernel = "shfl_modes",
       .covers = "shfl.sync .idx/.up/.down/.bfly with segment widths 32, 16, 8",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(kN, -1000000, 1000000, 140)), Out<int>(kN * 12)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               const int* w = &v[i & ~31];
               int l = i & 31;
               out.insert(out.end(),
                          {w[(l * 7) & 31], ShflUp(w, l, 3, 32), ShflDown(w, l, 5, 32), w[l ^ 9],
                           ShflIdx(w, l, l + 3, 16), ShflUp(w, l, 2, 16), ShflDown(w, l, 6, 16),
                           w[l ^ 5], ShflIdx(w, l, 1, 8), ShflUp(w, l, 1, 8), ShflDown(w, l, 7, 8),
                           w[l ^ 4]});
             }
             e.Equal(1, out);
           }},
      {.kernel = "shfl_types",
       .covers = "shfl.sync of f32, f64 and 64-bit integers",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<float>(kN, -10.0f, 10.0f, 141)),
                                     In(Random<double>(kN, -10.0, 10.0, 142)),
                                     In(Random<int64_t>(kN, LLONG_MIN, LLONG_MAX, 143)),
                                     Out<float>(kN), Out<double>(kN), Out<int64_t>(kN)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto f = in.Get<float>(0);
             auto d = in.Get<double>(1);
             auto w = in.Get<int64_t>(2);
             std::vector<float> fo;
             std::vector<double> dout;
             std::vector<int64_t> wo;
             for (int i = 0; i < kN; ++i) {
               int base = i & ~31, l = i & 31;
               fo.push_back(f[base + 31 - l]);
               dout.push_back(d[base + (l ^ 16)]);
               wo.push_back(ShflDown(&w[base], l, 1, 32));
             }
             e.Equal(3, fo);
             e.Equal(4, dout);
             e.Equal(5, wo);
           }},
      {.kernel = "shfl_partial",
       .covers = "shfl.sync and vote.ballot with partial member masks in divergent branches",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(kN, -1000, 1000, 144)), Out<int>(kN)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               const int* w = &v[i & ~31];
               int l = i & 31;
               if (l < 16) {
                 out.push_back(w[l ^ 1] + ShflDown(w, l, 2, 16));
               } else if (l & 1) {
                 out.push_back(w[17] * 2);
               } else {
                 u32 ballot = 0;
                 for (int k = 16; k < 32; k += 2) ballot |= u32(w[k] > 0) << k;
                 out.push_back(int(ballot));
               }
             }
             e.Equal(1, out);
           }},
      {.kernel = "vote_ops",
       .covers = "vote.sync .all/.any/.ballot/.uni, activemask, in converged and divergent code",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             auto v = Random<int>(kN, -1000, 1000, 145);
             for (int i = 32; i < 64; ++i) v[i] = std::max(v[i], -800);  // warp 1: "all" holds
             v[70] = 995;                                                 // warp 2: "any" holds
             return std::vector<Arg>{In(v), Out<u32>(kN * 7)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               const int* w = &v[i & ~31];
               int l = i & 31;
               u32 all = 1, any = 0, ballot = 0, branch = 0, ballot4 = 0;
               for (int k = 0; k < 32; ++k) {
                 all &= w[k] > -900;
                 any |= w[k] > 990;
                 ballot |= u32(w[k] & 1) << k;
                 bool same_branch = ((w[k] & 2) != 0) == ((w[l] & 2) != 0);
                 branch |= u32(same_branch) << k;
                 if (same_branch) ballot4 |= u32((w[k] & 4) != 0) << k;
               }
               out.insert(out.end(), {all, any, ballot, 0xffffffffu, 1u});
               if (w[l] & 2) {
                 out.insert(out.end(), {branch, ballot4});
               } else {
                 out.insert(out.end(), {u32(std::popcount(branch)) + 1000u, u32(!(branch >> 31))});
               }
             }
             e.Equal(1, out);
           }},
      {.kernel = "redux_ops",
       .covers = "redux.sync .add/.min/.max (.s32 .u32) .and/.or/.xor",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(kN, INT_MIN, INT_MAX, 146)), Out<int>(kN * 8)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               const int* w = &v[i & ~31];
               u32 sum = 0, umin = ~0u, umax = 0, all = ~0u, any = 0, x = 0;
               int smin = INT_MAX, smax = INT_MIN;
               for (int k = 0; k < 32; ++k) {
                 u32 u = w[k];
                 sum += u;
                 smin = std::min(smin, w[k]);
                 smax = std::max(smax, w[k]);
                 umin = std::min(umin, u);
                 umax = std::max(umax, u);
                 all &= u | 0x10000u;
                 any |= u & 0xff;
                 x ^= u;
               }
               out.insert(out.end(), {int(sum), smin, smax, int(umin), int(umax), int(all),
                                      int(any), int(x)});
             }
             e.Equal(1, out);
           }},
      {.kernel = "warp_reduce_scan",
       .covers = "shuffle reduction and inclusive scan (shfl.down, shfl.up)",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(kN, -10000, 10000, 147)), Out<int>(kN * 2)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out;
             for (int i = 0; i < kN; ++i) {
               const int* w = &v[i & ~31];
               int sum = 0, scan = 0;
               for (int k = 0; k < 32; ++k) sum += w[k];
               for (int k = 0; k <= (i & 31); ++k) scan += w[k];
               out.insert(out.end(), {sum, scan});
             }
             e.Equal(1, out);
           }},
      {.kernel = "lane_registers",
       .covers = "%laneid, %lanemask_eq/lt/le/gt/ge (2-D block)",
       .grid = {2},
       .block = {16, 4},
       .args = [] { return std::vector<Arg>{Out<u32>(kN * 6)}; },
       .reference =
           [](const Values&, Expect& e) {
             std::vector<u32> out;
             for (int i = 0; i < kN; ++i) {
               u32 lane = i & 31, eq = 1u << lane, lt = eq - 1;
               out.insert(out.end(), {lane, eq, lt, lt | eq, ~(lt | eq), ~lt});
             }
             e.Equal(0, out);
           }},
  };
}

}  // namespace

std::vector<Case> warp_cases() { return Cases(); }

}  // namespace tally::emu::conformance
