// Device-side malloc/free: per-thread blocks, blocks that outlive a launch, the heap limit
// (CU_LIMIT_MALLOC_HEAP_SIZE: NULL when exhausted, fixed once used), and bounds checks.
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

// A fresh context for tests that set the heap limit or poison their context.
struct FreshContext {
  FreshContext() {
    EnsureContext();
    REQUIRE(Emu().cuCtxCreate_v2(&context, 0, 0) == CUDA_SUCCESS);
  }
  ~FreshContext() { Emu().cuCtxDestroy_v2(context); }
  CUcontext context = nullptr;
};

TEST_CASE("every thread mallocs, uses and frees its own block") {
  FreshContext fresh;
  constexpr unsigned kThreads = 4 * 64;
  int count = 100;
  CUdeviceptr sums = Zeros<long long>(kThreads), failures = Zeros<int>(1);
  CUfunction f = KernelFrom("heap", "heap_scratch");
  for (int round = 0; round < 3; ++round) {  // freed blocks are reusable
    EMU_OK(LaunchAndWait(f, 4, 64, {&count, &sums, &failures}));
  }
  std::vector<long long> expected(kThreads);
  for (unsigned t = 0; t < kThreads; ++t)
    expected[t] = t * 1000ll * count + count * (count - 1) / 2;
  CHECK(Download<long long>(sums, kThreads) == expected);
  CHECK(Download<int>(failures, 1)[0] == 0);
}

TEST_CASE("heap blocks outlive the launch; the heap limit makes malloc return NULL") {
  FreshContext fresh;
  EMU_OK(Emu().cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * 1024));
  constexpr unsigned kThreads = 64;
  CUdeviceptr slots = Zeros<CUdeviceptr>(kThreads), values = Zeros<int>(kThreads);
  int bytes = 2048;  // 64 x 2 KiB = 128 KiB: only half of them fit in 64 KiB
  EMU_OK(LaunchAndWait(KernelFrom("heap", "heap_keep"), 1, kThreads, {&slots, &bytes}));
  std::vector<CUdeviceptr> pointers = Download<CUdeviceptr>(slots, kThreads);
  int granted = 0;
  for (CUdeviceptr p : pointers) granted += p != 0;
  CHECK(granted == 64 * 1024 / 2048);
  // The blocks are device memory the host sees through the allocation table, but cuMemFree
  // does not release them.
  CUdeviceptr some = 0;
  for (CUdeviceptr p : pointers) some = p != 0 ? p : some;
  CUdeviceptr base = 0;
  size_t size = 0;
  EMU_OK(Emu().cuMemGetAddressRange_v2(&base, &size, some));
  CHECK(size == 2048);
  CHECK(Emu().cuMemFree_v2(some) == CUDA_ERROR_INVALID_VALUE);
  // Once a heap kernel ran the limit is fixed.
  CHECK(Emu().cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 1 << 20) == CUDA_ERROR_INVALID_VALUE);

  EMU_OK(LaunchAndWait(KernelFrom("heap", "heap_release"), 1, kThreads, {&slots, &values}));
  std::vector<int> got = Download<int>(values, kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    CHECK(got[t] == (pointers[t] != 0 ? static_cast<int>(t) + 7 : -1));
  }
  // Everything was freed: all of them fit again.
  EMU_OK(LaunchAndWait(KernelFrom("heap", "heap_keep"), 1, kThreads / 2, {&slots, &bytes}));
  for (CUdeviceptr p : Download<CUdeviceptr>(slots, kThreads / 2)) CHECK(p != 0);
}

TEST_CASE("heap blocks are bounds-checked; freeing a foreign pointer faults") {
  {
    FreshContext fresh;
    CUdeviceptr out = Zeros<int>(1);
    CHECK(LaunchAndWait(KernelFrom("heap", "heap_overrun"), 1, 1, {&out}) ==
          CUDA_ERROR_ILLEGAL_ADDRESS);
  }
  {
    FreshContext fresh;
    CUdeviceptr data = Zeros<int>(4);
    CHECK(LaunchAndWait(KernelFrom("heap", "heap_bad_free"), 1, 1, {&data}) ==
          CUDA_ERROR_ILLEGAL_ADDRESS);
  }
}

}  // namespace
}  // namespace tally::emu::testing
