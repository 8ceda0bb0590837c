// References for kernels/async_copy.cu: bit-exact. mbarrier objects make the transformation
// analysis refuse the kernel.
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

std::vector<Case> Cases() {
  return {
      {.kernel = "cp_async_stages",
       .covers = "cp.async .ca/.cg 4/8/16 bytes, commit_group, wait_group, wait_all",
       .grid = {2},
       .block = {64},
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(2 * 3 * 256, -100000, 100000, 182)),
                                     Out<int>(2 * 3 * 256)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(v.size());
             for (int tile = 0; tile < 6; ++tile)
               for (int k = 0; k < 256; ++k) out[tile * 256 + k] = v[tile * 256 + 255 - k] + tile % 3;
             e.Equal(1, out);
           }},
      {.kernel = "mbarrier_phase",
       .covers = "mbarrier.init/arrive/test_wait as a block barrier",
       .grid = {2},
       .block = {64},
       .args = [] { return std::vector<Arg>{In(Random<int>(128, -1000, 1000, 183)), Out<int>(128)}; },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             std::vector<int> out(128);
             for (int i = 0; i < 128; ++i) out[i] = v[i / 64 * 64 + 63 - i % 64] * 2 + 1;
             e.Equal(1, out);
           },
       .slice_refusal = "uses mbarrier objects",
       .ptb_refusal = "uses mbarrier objects"},
  };
}

}  // namespace

std::vector<Case> async_copy_cases() { return Cases(); }

}  // namespace tally::emu::conformance
