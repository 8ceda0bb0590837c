// Warp-level matrix instructions beyond the conformance suite (which covers wmma, mma.sync,
// ldmatrix and movmatrix against CPU matmuls): the whole warp must execute them (.aligned), and
// stmatrix (sm_90; the suite runs sm_80 modules) follows the PTX ISA's fragment layout.
#include <cstring>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

TEST_CASE("a full warp runs mma.sync") {
  ScratchContext scratch("matrix.ptx");
  CUdeviceptr d = Zeros<float>(64);
  REQUIRE(LaunchAndWait(scratch.Kernel("block_mma"), 1, 64, {&d}) == CUDA_SUCCESS);
  // All-ones 16x16 times 16x8: every element of D is 16; each lane adds its four.
  CHECK(Download<float>(d, 64) == std::vector<float>(64, 64.0f));
}

TEST_CASE("a matrix instruction run by part of a warp fails the launch") {
  for (auto [kernel, threads] : {std::pair{"block_mma", 16u}, std::pair{"divergent_mma", 32u}}) {
    INFO(kernel);
    ScratchContext scratch("matrix.ptx");
    CUdeviceptr d = Zeros<float>(32);
    CHECK(LaunchAndWait(scratch.Kernel(kernel), 1, threads, {&d}) ==
          CUDA_ERROR_ILLEGAL_INSTRUCTION);
  }
}

// Lane l holds row l / 4, columns 2 (l % 4) and the next of matrix j in register j (.trans: of
// the transposed matrix); row r of matrix j goes to the address lane 8 j + r supplies, which
// is shared row (5 (8 j + r)) mod 32.
TEST_CASE("stmatrix stores fragments in the ldmatrix layout") {
  for (bool trans : {false, true}) {
    INFO(trans);
    ScratchContext scratch("matrix.ptx");
    std::vector<uint32_t> regs(128);
    for (size_t i = 0; i < regs.size(); ++i) regs[i] = static_cast<uint32_t>(i * 0x00020002u + 0x00010000u);
    CUdeviceptr dregs = Upload(regs), out = Zeros<uint16_t>(256);
    REQUIRE(LaunchAndWait(scratch.Kernel(trans ? "stmatrix_x4_trans" : "stmatrix_x4"), 1, 32,
                          {&dregs, &out}) == CUDA_SUCCESS);
    std::vector<uint16_t> expected(256);
    for (int l = 0; l < 32; ++l) {
      for (int j = 0; j < 4; ++j) {
        for (int h = 0; h < 2; ++h) {
          int row = l / 4, col = 2 * (l % 4) + h;
          if (trans) std::swap(row, col);
          expected[(5 * (8 * j + row) % 32) * 8 + col] =
              static_cast<uint16_t>(regs[4 * l + j] >> (16 * h));
        }
      }
    }
    CHECK(Download<uint16_t>(out, 256) == expected);
  }
}

}  // namespace
}  // namespace tally::emu::testing
