#include "emulator/internal/texture.h"

#include "emulator/internal/cuda_status.h"

namespace tally::emu {

uint32_t ChannelBytes(CUarray_format format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

absl::Status CheckFormat(CUarray_format format, unsigned channels) {
  if (ChannelBytes(format) == 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unsupported array format");
  }
  if (channels != 1 && channels != 2 && channels != 4) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "channels must be 1, 2 or 4");
  }
  return absl::OkStatus();
}

}  // namespace tally::emu
