// References for kernels/grid_sync.cu: bit-exact. The transformation analysis must refuse
// grid-wide synchronisation (it needs every block resident at once).
#include "emulator/tests/conformance/themes.h"

namespace tally::emu::conformance {
namespace {

std::vector<Case> Cases() {
  return {
      {.kernel = "grid_sync_rotate",
       .covers = "grid-wide sync (cooperative launch, cooperative_groups grid.sync)",
       .grid = {4},
       .block = {64},
       .cooperative = true,
       .args =
           [] {
             return std::vector<Arg>{In(Random<int>(256, -1000, 1000, 180)), Out<int>(256),
                                     Out<int>(512)};
           },
       .reference =
           [](const Values& in, Expect& e) {
             auto v = in.Get<int>(0);
             const int n = 256;
             std::vector<int> scratch(n), out(2 * n);
             for (int i = 0; i < n; ++i) scratch[i] = v[i] * 3;
             for (int i = 0; i < n; ++i) out[i] = scratch[(i + 64) % n] + 1;
             for (int i = 0; i < n; ++i) scratch[i] = out[(i + n - 1) % n];
             for (int i = 0; i < n; ++i) out[n + i] = scratch[(i * 7) % n];
             e.Equal(1, scratch);
             e.Equal(2, out);
           },
       .slice_refusal = "grid-wide synchronisation",
       .ptb_refusal = "grid-wide synchronisation"},
  };
}

}  // namespace

std::vector<Case> grid_sync_cases() { return Cases(); }

}  // namespace tally::emu::conformance
