// The context limits cuCtxSetLimit / cuCtxGetLimit support, with CUDA's defaults and the largest
// value accepted. Limits not listed (device-runtime and CIG limits) are
// CUDA_ERROR_UNSUPPORTED_LIMIT: the emulator has no device runtime and no CIG contexts.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace tally::emu {

struct LimitInfo {
  CUlimit limit;
  size_t default_value;
  size_t max_value;  // larger requests are clamped ("the driver is free to modify the value")
  // Larger requests fail with CUDA_ERROR_INVALID_VALUE instead (what NVIDIA's driver 580 does
  // for the persisting L2 set-aside on an H100, docs/gpu-check.md).
  bool refuses_above_max = false;
};

inline constexpr LimitInfo kLimits[] = {
    {CU_LIMIT_STACK_SIZE, 1024, 512 * 1024},  // per thread; sm_80 local memory is 512 KiB
    {CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20, size_t{1} << 30},
    {CU_LIMIT_MALLOC_HEAP_SIZE, 8 << 20, size_t{1} << 40},  // bounded by device memory anyway
    {CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 64, 128},           // a hint
    {CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0, 3 << 20, true},  // a hint; 3/4 of the 4 MiB L2
};

inline const LimitInfo* FindLimit(CUlimit limit) {
  for (const LimitInfo& info : kLimits) {
    if (info.limit == limit) return &info;
  }
  return nullptr;
}

}  // namespace tally::emu
