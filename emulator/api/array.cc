// CUDA arrays (not implemented yet): copies naming an array endpoint fail clearly.
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/memory_layout.h"

namespace tally::emu {

absl::StatusOr<PitchedRegion> ArrayRegion(Driver&, CUarray, uint64_t, uint64_t, uint64_t,
                                          const CopyExtent&) {
  return CudaError(CUDA_ERROR_NOT_SUPPORTED, "CUDA arrays are not supported by the emulator yet");
}

}  // namespace tally::emu
