// References for kernels/misc.cu: every result bit-exact; clocks are checked for monotonicity
// only, and printed lines as a set (threads print concurrently).
#include <cstdio>

#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

using u32 = uint32_t;

int Collatz(int x) {
  int steps = 0;
  while (x != 1 && steps < 500) {
    x = (x & 1) ? 3 * x + 1 : x / 2;
    ++steps;
  }
  return steps;
}

std::vector<Case> Cases() {
  return {
      {.kernel = "noinline_calls",
       .covers = "call to non-inlined .func: struct return, mixed parameters, nested and "
                 "divergent calls",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, 1, 5000, 160)), Out<int64_t>(384)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int64_t> out;
             for (int v : in.Get<int>(0)) {
               int64_t r = (v & 1) ? Collatz(v) : int64_t(Collatz(v) + 3 * v + 2) * 100;
               out.insert(out.end(), {3 * v + 5, (int64_t(v) << 20) * v - 17, r});
             }
             e.Equal(1, out);
           }},
      {.kernel = "ctaid_in_function",
       .covers = "%ctaid/%nctaid read in a non-inlined .func, 3-D grid and blocks",
       .grid = {3, 2, 2},
       .block = {4, 2, 2},
       .args = [] { return std::vector<Arg>{Out<u32>(192)}; },
       .reference =
           [](const Values&, Expect& e) {
             std::vector<u32> out;
             for (u32 b = 0; b < 12; ++b)
               for (u32 t = 0; t < 16; ++t) out.push_back(b * 1000 + t);
             e.Equal(0, out);
           }},
      {.kernel = "special_registers_3d",
       .covers = "%tid %ntid %ctaid %nctaid (.x .y .z) in 3-D grids of 3-D blocks, %warpid < "
                 "%nwarpid",
       .grid = {2, 3, 2},
       .block = {4, 2, 3},
       .args = [] { return std::vector<Arg>{Out<u32>(288 * 10)}; },
       .reference =
           [](const Values&, Expect& e) {
             std::vector<u32> out;
             for (u32 bz = 0; bz < 2; ++bz)
               for (u32 by = 0; by < 3; ++by)
                 for (u32 bx = 0; bx < 2; ++bx)
                   for (u32 tz = 0; tz < 3; ++tz)
                     for (u32 ty = 0; ty < 2; ++ty)
                       for (u32 tx = 0; tx < 4; ++tx) {
                         out.insert(out.end(),
                                    {tx, ty, tz, 40203u, bx, by, bz, 20302u, 1u, tz * by + ty * 2});
                       }
             e.Equal(0, out);
           }},
      {.kernel = "clocks_and_timers",
       .covers = "%clock, %clock64, %globaltimer (monotonic within a thread)",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 161)), Out<u32>(512)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<u32> out;
             for (int v : in.Get<int>(0)) {
               u32 x = v;
               for (int k = 0; k < 50; ++k) x = x * 1103515245u + 12345u;
               out.insert(out.end(), {x, 1, 1, 1});
             }
             e.Equal(1, out);
           }},
      {.kernel = "sm_registers",
       .covers = "%smid, %nsmid",
       .grid = {4},
       .block = {32},
       .args = [] { return std::vector<Arg>{Out<u32>(128)}; },
       .reference = [](const Values&, Expect& e) { e.Equal(0, std::vector<u32>(128, 1)); },
       .slice_refusal = "reads %smid",
       .ptb_refusal = "reads %smid"},
      {.kernel = "nanosleep_wait",
       .covers = "nanosleep",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 162)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(128);
             for (int i = 0; i < 128; ++i) out[i] = v[(i / 64) * 64 + 63 - i % 64] * 5;
             e.Equal(1, out);
           }},
      {.kernel = "device_printf",
       .covers = "device printf (vprintf): %u %d %x %.3f %s %c %lld %05d",
       .grid = {2},
       .block = {32},
       .args = [] { return std::vector<Arg>{In(Random<int>(64, -100000, 100000, 163)), Value(42)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<std::string> lines;
             for (int i = 0; i < 64; i += 8) {
               char line[256];
               std::snprintf(line, sizeof line,
                             "block %u thread %u: v=%d hex=%x f=%.3f s=%s c=%c ll=%lld tag=%05d",
                             i / 32, i % 32, v[i], unsigned(v[i]), v[i] * 0.5,
                             v[i] < 0 ? "neg" : "pos", 'A' + (i % 32) / 8,
                             static_cast<long long>(v[i]) * 1000000007ll, 42);
               lines.push_back(line);
             }
             e.Printed(lines);
           }},
      {.kernel = "exit_instruction",
       .covers = "exit in divergent threads",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 164)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             std::vector<int> out;
             for (int v : in.Get<int>(0)) out.push_back(v < 0 ? 0 : v * 2 + 1);
             e.Equal(1, out);
           }},
      {.kernel = "grid_stride_3d",
       .covers = "grid-stride loop over a 3-D grid",
       .grid = {2, 2, 2},
       .block = {32},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(1000, -1000, 1000, 165)), Out<int>(1000),
                                     Value(1000)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(1000);
             for (int i = 0; i < 1000; ++i) out[i] = v[i] * 3 - (i % 256) / 32;
             e.Equal(1, out);
           }},
      {.kernel = "early_return_blocks",
       .covers = "return of whole blocks and partial warps around a barrier",
       .grid = {8},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(512, -1000, 1000, 166)), Out<int>(512)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(512);
             for (int b = 0; b < 8; ++b) {
               if (b % 4 == 3) continue;
               for (int t = 0; t < 64; ++t) {
                 if (t % 7 == 6) continue;
                 out[b * 64 + t] = v[b * 64 + (t + 1) % 64] + b;
               }
             }
             e.Equal(1, out);
           }},
      {.kernel = "barrier_in_function",
       .covers = "bar.sync inside a non-inlined .func",
       .grid = {3},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(192, -1000, 1000, 167)), Out<int>(192)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(192);
             for (int i = 0; i < 192; ++i) {
               int b = i / 64 * 64, t = i % 64;
               int r = v[b + 63 - t] * 3 + 1, mirror_r = v[b + t] * 3 + 1;
               out[i] = mirror_r + r;
             }
             e.Equal(1, out);
           },
       .ptb_refusal = "barrier in called function"},
      {.kernel = "grid_id",
       .covers = "%gridid",
       .grid = {2},
       .block = {32},
       .args = [] { return std::vector<Arg>{Out<u32>(64)}; },
       .reference = [](const Values&, Expect& e) { e.Equal(0, std::vector<u32>(64, 1)); },
       .slice_refusal = "reads %gridid",
       .ptb_refusal = "reads %gridid"},
      {.kernel = "last_block_reduce",
       .covers = "threadfence + atomic.inc ticket: the last block to finish reduces (volatile "
                 "loads in a loop that waits for nobody: sliced and PTB too)",
       .grid = {6},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(384, -1000, 1000, 168)), Out<int>(6),
                                     Out<u32>(1), Out<int>(1)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> partial(6);
             int total = 0;
             for (int i = 0; i < 384; ++i) partial[i / 64] += v[i], total += v[i];
             e.Equal(1, partial);
             e.Equal(2, std::vector<u32>{6});  // wraps only when incremented past the limit
             e.Equal(3, std::vector<int>{total});
           }},
  };
}

}  // namespace

std::vector<Case> misc_cases() { return Cases(); }

}  // namespace tally::emu::conformance
