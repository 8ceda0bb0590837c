// cp.async and mbarrier as nvcc compiles CUDA's pipeline and barrier APIs for sm_80, against CPU
// references, plus raw mbarrier phase/count semantics.
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

TEST_CASE("__pipeline_memcpy_async: 16-, 8- and 4-byte copies with zero fill") {
  std::vector<int> big(64 * 4), small(64), pairs(64 * 2);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<int>(i * 3 + 1);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<int>(1000 + i);
  for (size_t i = 0; i < pairs.size(); ++i) pairs[i] = static_cast<int>(-5 - i);
  CUdeviceptr din = Upload(big), dout = Zeros<int>(big.size()), dsmall = Upload(small),
              dsmall_out = Zeros<int>(64), dpairs = Upload(pairs), dpairs_out = Zeros<int>(128);
  EMU_OK(LaunchAndWait(KernelFrom("async_copy", "pipeline_primitives"), 1, 64,
                       {&din, &dout, &dsmall, &dsmall_out, &dpairs, &dpairs_out}));
  std::vector<int> out = Download<int>(dout, big.size()), small_out = Download<int>(dsmall_out, 64),
                   pairs_out = Download<int>(dpairs_out, 128);
  for (int i = 0; i < 64; ++i) {
    int j = 63 - i;
    for (int k = 0; k < 4; ++k) REQUIRE(out[i * 4 + k] == big[j * 4 + k]);
    for (int k = 0; k < 2; ++k) REQUIRE(pairs_out[i * 2 + k] == pairs[j * 2 + k]);
    REQUIRE(small_out[i] == ((j & 1) ? 0 : small[j]));  // odd threads zero-filled
  }
}

TEST_CASE("cuda::pipeline double buffering and cuda::barrier with memcpy_async") {
  constexpr int kStages = 5;
  std::vector<int> in(kStages * 128);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 97) - 40;
  CUdeviceptr din = Upload(in), dout = Zeros<int>(128);
  int stages = kStages;
  EMU_OK(
      LaunchAndWait(KernelFrom("async_copy", "pipeline_stages"), 1, 128, {&din, &dout, &stages}));
  std::vector<int> out = Download<int>(dout, 128);
  for (int i = 0; i < 128; ++i) {
    int expected = 0;
    for (int s = 0; s < kStages; ++s) expected += in[s * 128 + i] * (s + 1);
    REQUIRE(out[i] == expected);
  }

  CUdeviceptr dround = Upload(std::vector<int>(in.begin(), in.begin() + 256));
  CUdeviceptr dreversed = Zeros<int>(256);
  EMU_OK(LaunchAndWait(KernelFrom("async_copy", "barrier_copy"), 2, 128, {&dround, &dreversed}));
  std::vector<int> reversed = Download<int>(dreversed, 256);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 128; ++i) REQUIRE(reversed[round * 128 + i] == in[round * 128 + 127 - i]);
  }
}

TEST_CASE("mbarrier phases, counts, arrive_drop, parity waits and transaction counts") {
  CUdeviceptr log = Zeros<unsigned>(9);
  EMU_OK(LaunchAndWait(KernelFrom("async_copy", "mbarrier_ops"), 1, 32, {&log}));
  CHECK(Download<unsigned>(log, 9) == std::vector<unsigned>{2, 0, 0, 1, 0, 1, 0, 0, 1});
}

}  // namespace
}  // namespace tally::emu::testing
