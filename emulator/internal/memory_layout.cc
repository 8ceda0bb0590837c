#include "emulator/internal/memory_layout.h"

#include <cstring>

#include "emulator/internal/cuda_status.h"

namespace tally::emu {
namespace {

// a * b + c without wrapping.
bool MulAdd(uint64_t a, uint64_t b, uint64_t c, uint64_t* out) {
  uint64_t product = 0;
  return !__builtin_mul_overflow(a, b, &product) && !__builtin_add_overflow(product, c, out);
}

}  // namespace

absl::StatusOr<uint64_t> RegionOffset(const PitchedRegion& region, uint64_t x_bytes, uint64_t y,
                                      uint64_t z) {
  uint64_t row = 0, offset = 0;
  if (!MulAdd(y, region.pitch, x_bytes, &row) || !MulAdd(z, region.slice, row, &offset)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "copy offset overflows");
  }
  return offset;
}

absl::StatusOr<uint64_t> RegionSpan(const PitchedRegion& region, const CopyExtent& extent) {
  uint64_t rows = 0, span = 0;
  if (!MulAdd(extent.height - 1, region.pitch, extent.width_bytes, &rows) ||
      !MulAdd(extent.depth - 1, region.slice, rows, &span)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "copy extent overflows");
  }
  return span;
}

void CopyRegion(const PitchedRegion& dst, const PitchedRegion& src, const CopyExtent& extent) {
  for (uint64_t z = 0; z < extent.depth; ++z) {
    for (uint64_t y = 0; y < extent.height; ++y) {
      std::memmove(reinterpret_cast<void*>(dst.base + z * dst.slice + y * dst.pitch),
                   reinterpret_cast<const void*>(src.base + z * src.slice + y * src.pitch),
                   extent.width_bytes);
    }
  }
}

}  // namespace tally::emu
