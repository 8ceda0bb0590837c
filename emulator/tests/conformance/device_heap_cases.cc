// References for kernels/device_heap.cu: bit-exact.
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

std::vector<Case> Cases() {
  return {
      {.kernel = "heap_malloc_free",
       .covers = "device malloc/free (per thread, and a block-shared buffer)",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 181)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> sums, out(128);
             for (int x : v) {
               int count = 1 + (x & 31), sum = 0;
               for (int k = 0; k < count; ++k) sum += x + k;
               sums.push_back(sum);
             }
             for (int i = 0; i < 128; ++i) out[i] = sums[i / 64 * 64 + 63 - i % 64];
             e.Equal(1, out);
           }},
  };
}

}  // namespace

std::vector<Case> device_heap_cases() { return Cases(); }

}  // namespace tally::emu::conformance
