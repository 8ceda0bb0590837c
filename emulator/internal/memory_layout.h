// Pitched memory regions: the layout that 2-D/3-D copies, CUDA arrays and pitch2D textures share.
// A region is `base` plus rows of `pitch` bytes and slices of `slice` bytes.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace tally::emu {

class Driver;

// CU_DEVICE_ATTRIBUTE_MAX_PITCH.
inline constexpr uint64_t kMaxPitch = 2147483647;

struct CopyExtent {
  uint64_t width_bytes = 0, height = 0, depth = 0;
};

struct PitchedRegion {
  uint64_t base = 0;  // host address of the first byte of the copy
  uint64_t pitch = 0, slice = 0;
};

// Byte offset of (x_bytes, y, z) in `region`; INVALID_VALUE when it overflows.
absl::StatusOr<uint64_t> RegionOffset(const PitchedRegion& region, uint64_t x_bytes, uint64_t y,
                                      uint64_t z);
// Bytes from the first to one past the last byte `extent` touches in `region`.
absl::StatusOr<uint64_t> RegionSpan(const PitchedRegion& region, const CopyExtent& extent);
// Copies `extent` row by row (memmove: overlapping rows are the caller's problem, as in CUDA).
void CopyRegion(const PitchedRegion& dst, const PitchedRegion& src, const CopyExtent& extent);

// The region of CUDA array `array` starting at element byte offset x_bytes, row y, layer z,
// checked to hold `extent` (api/array.cc).
absl::StatusOr<PitchedRegion> ArrayRegion(Driver& driver, CUarray array, uint64_t x_bytes,
                                          uint64_t y, uint64_t z, const CopyExtent& extent);

}  // namespace tally::emu
