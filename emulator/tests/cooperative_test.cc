// Cooperative launches: grid-wide synchronisation (cooperative_groups' grid.sync() as nvcc
// compiles it: the grid workspace in %envreg1/2, an atomic arrival counter and a spin), blocks
// beyond the host threads interleaved, and deadlocked grids reported instead of hanging.
#include <numeric>
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

CUresult LaunchCooperative(CUfunction f, unsigned grid, unsigned block, std::vector<void*> args) {
  CUresult result =
      Emu().cuLaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data());
  if (result != CUDA_SUCCESS) return result;
  return Emu().cuCtxSynchronize();
}

TEST_CASE("grid.sync() orders every step of a grid-wide stencil") {
  constexpr int kBlocks = 24, kThreads = 64, kSteps = 5, kN = kBlocks * kThreads - 7;
  std::vector<int> a(kN);
  for (int i = 0; i < kN; ++i) a[i] = (i * 7919) % 1000;
  std::vector<int> expected = a, scratch(kN);
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < kN; ++i) {
      scratch[i] = expected[(i + kN - 1) % kN] + 2 * expected[i] + expected[(i + 1) % kN] + s;
    }
    expected.swap(scratch);
  }
  CUdeviceptr da = Upload(a), db = Zeros<int>(kN);
  int n = kN, steps = kSteps;
  EMU_OK(LaunchCooperative(KernelFrom("cooperative", "grid_stencil"), kBlocks, kThreads,
                           {&da, &db, &n, &steps}));
  // After an odd number of steps the result is in b.
  CHECK(Download<int>(kSteps % 2 == 1 ? db : da, kN) == expected);
}

TEST_CASE("a grid reduction seen by every thread after grid.sync()") {
  constexpr unsigned kBlocks = 10, kThreads = 96, kN = kBlocks * kThreads;
  std::vector<int> in(kN);
  std::iota(in.begin(), in.end(), -300);
  const int sum = std::accumulate(in.begin(), in.end(), 0);
  CUdeviceptr din = Upload(in), total = Zeros<int>(1), out = Zeros<int>(kN),
              info = Zeros<unsigned>(3);
  CUfunction f = KernelFrom("cooperative", "grid_total");
  EMU_OK(LaunchCooperative(f, kBlocks, kThreads, {&din, &total, &out, &info}));
  CHECK(Download<int>(out, kN) == std::vector<int>(kN, sum));
  CHECK(Download<unsigned>(info, 3) == std::vector<unsigned>{1, kN, kBlocks});
}

TEST_CASE("grid.sync() outside a cooperative launch traps; a deadlocked grid is reported") {
  CUcontext context = nullptr;
  EMU_OK(Emu().cuCtxCreate_v2(&context, 0, 0));
  CUdeviceptr din = Zeros<int>(64), total = Zeros<int>(1), out = Zeros<int>(64),
              info = Zeros<unsigned>(3);
  std::vector<void*> args = {&din, &total, &out, &info};
  // Without a grid workspace cooperative_groups traps, as on a GPU.
  CHECK(LaunchAndWait(KernelFrom("cooperative", "grid_total"), 2, 32, args) ==
        CUDA_ERROR_LAUNCH_FAILED);
  EMU_OK(Emu().cuCtxDestroy_v2(context));

  EMU_OK(Emu().cuCtxCreate_v2(&context, 0, 0));
  CUdeviceptr flags = Zeros<int>(4);
  CHECK(LaunchCooperative(KernelFrom("cooperative", "grid_deadlock"), 3, 32, {&flags}) ==
        CUDA_ERROR_LAUNCH_FAILED);
  EMU_OK(Emu().cuCtxDestroy_v2(context));
}

}  // namespace
}  // namespace tally::emu::testing
