// The emulated GPU's "machine code": what cuLinkComplete produces and cuModuleLoadData loads
// back, as NVIDIA's driver produces and loads a cubin. The emulator executes PTX, so its machine
// code is the linked PTX behind a header that names the target and checks the bytes:
//
//   magic "\x1bTEMUBIN" (8 bytes), target arch (u32, 80 for sm_80), reserved (u32, 0),
//   PTX size (u64), PTX checksum (u64, FNV-1a), the PTX, a NUL.
//
// It is made only from PTX that parsed and loaded (the link checks it as a load would), so an
// image that loads is one the emulator accepted once; a damaged one is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally::emu {

// Whether `image` starts with the machine code's magic (it may still be damaged).
bool IsMachineCode(const void* image);

// The image of `ptx` (checked already) for sm_`arch`.
std::string MakeMachineCode(std::string_view ptx, uint32_t arch);

// The PTX of a machine-code image for sm_`arch`: CUDA_ERROR_INVALID_IMAGE when it is damaged
// (another magic, a reserved field set, its text shorter than its header says, a checksum that
// does not match), CUDA_ERROR_NO_BINARY_FOR_GPU when it was made for another arch (CUDA Driver
// API, CUresult: "no kernel image available that is suitable for the device").
absl::StatusOr<std::string_view> MachineCodePtx(const void* image, uint32_t arch);

}  // namespace tally::emu
