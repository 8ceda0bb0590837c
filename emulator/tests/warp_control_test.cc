// match.sync, grouped collectives and brx.idx (kernels/warp_control.cu) against host references.
#include <algorithm>
#include <climits>
#include <random>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

// Lanes of `lanes` (within the warp of `lane`) whose value equals that of `lane`.
template <typename T>
unsigned SameAs(const std::vector<T>& values, int lane, unsigned lanes) {
  int base = lane / 32 * 32;
  unsigned same = 0;
  for (int j = 0; j < 32; ++j) {
    if ((lanes >> j & 1) != 0 && values[base + j] == values[lane]) same |= 1u << j;
  }
  return same;
}

TEST_CASE("match.any and match.all find the lanes holding equal values") {
  const int warps = 3, n = warps * 32;
  std::mt19937 rng(3);
  std::vector<unsigned> values(n);
  std::vector<unsigned long long> wide(n);
  for (int i = 0; i < n; ++i) {
    values[i] = i / 32 == 1 ? 7 : rng() % 4;  // warp 1: all equal
    // Equal low words, high words that differ: 64-bit matching must compare all bits.
    wide[i] = static_cast<unsigned long long>(rng() % 2) << 32 | values[i];
  }
  CUdeviceptr dv = Upload(values), dw = Upload(wide), dout = Zeros<unsigned>(n * 5);
  EMU_OK(LaunchAndWait(KernelFrom("warp_control", "match"), warps, 32, {&dv, &dw, &dout}));
  std::vector<unsigned> out = Download<unsigned>(dout, n * 5);
  for (int i = 0; i < n; ++i) {
    INFO("thread " << i);
    const unsigned* o = &out[i * 5];
    CHECK(o[0] == SameAs(values, i, 0xffffffffu));
    bool all_equal = SameAs(values, i, 0xffffffffu) == 0xffffffffu;
    CHECK(o[1] == (all_equal ? 0xffffffffu : 0));
    CHECK(o[2] == (all_equal ? 1u : 0u));
    CHECK(o[3] == SameAs(wide, i, 0xffffffffu));
    CHECK(o[4] == (i % 2 == 0 ? SameAs(values, i, 0x55555555u) : 0u));
  }
}

TEST_CASE("collectives over groups with different member masks give each lane its group's") {
  const int warps = 2, n = warps * 32;
  std::mt19937 rng(5);
  std::vector<unsigned> labels(n);
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) {
    labels[i] = rng() % 3;
    values[i] = static_cast<int>(rng() % 21) - 10;
  }
  CUdeviceptr dl = Upload(labels), dv = Upload(values), dout = Zeros<unsigned>(n * 5);
  EMU_OK(LaunchAndWait(KernelFrom("warp_control", "grouped"), warps, 32, {&dl, &dv, &dout}));
  std::vector<unsigned> out = Download<unsigned>(dout, n * 5);
  for (int i = 0; i < n; ++i) {
    INFO("thread " << i << " label " << labels[i]);
    const unsigned group = SameAs(labels, i, 0xffffffffu);
    const int base = i / 32 * 32;
    int sum = 0, max = INT32_MIN;
    unsigned ballot = 0;
    for (int j = 0; j < 32; ++j) {
      if ((group >> j & 1) == 0) continue;
      sum += values[base + j];
      max = std::max(max, values[base + j]);
      if (values[base + j] > 0) ballot |= 1u << j;
    }
    const unsigned* o = &out[i * 5];
    CHECK(o[0] == group);
    CHECK(static_cast<int>(o[1]) == sum);
    CHECK(static_cast<int>(o[2]) == max);
    CHECK(o[3] == ballot);
    const bool uniform = ballot == 0 || ballot == group;
    CHECK(o[4] == (uniform ? group : 1u));
  }
}

TEST_CASE("brx.idx sends each lane to the target its index selects") {
  const int n = 64;
  std::vector<unsigned> selectors(n), values(n);
  for (int i = 0; i < n; ++i) {
    selectors[i] = (i * 7) % 4;
    values[i] = 1000 + i;
  }
  CUdeviceptr ds = Upload(selectors), dv = Upload(values);
  EMU_OK(LaunchAndWait(KernelFrom("warp_control", "indexed_branch"), 2, 32, {&ds, &dv}));
  std::vector<unsigned> out = Download<unsigned>(dv, n);
  for (int i = 0; i < n; ++i) {
    unsigned x = values[i];
    unsigned expected[] = {x + 11, x * 3, x ^ 0xffu, x << 4};
    INFO("thread " << i << " selector " << selectors[i]);
    CHECK(out[i] == expected[selectors[i]] + 1);
  }
}

TEST_CASE("brx.idx with an index outside its list fails the launch") {
  ScratchContext scratch("warp_control.ptx");
  std::vector<unsigned> selectors(32, 1);
  selectors[5] = 4;
  CUdeviceptr ds = Upload(selectors), dv = Zeros<unsigned>(32);
  CHECK(LaunchAndWait(scratch.Kernel("indexed_branch"), 1, 32, {&ds, &dv}) ==
        CUDA_ERROR_LAUNCH_FAILED);
}

}  // namespace
}  // namespace tally::emu::testing
