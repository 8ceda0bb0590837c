// The PTX a registered image gives the device: the best entry for its arch, or, for a program
// built with `nvcc -rdc=true`, every translation unit's PTX linked into one module
// (ptx_transform/link.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/ir.h"

namespace tally::server {

struct DeviceCode {
  // The parsed program, for a linked one; a single unit's PTX is left to the caller to parse
  // (or only to index: ptx_transform/module_index.h).
  std::optional<ptx::Module> module;
  std::string ptx;  // the text to load
  uint32_t arch = 0;
  // Functions left for the driver to resolve (linked programs only), for load errors.
  std::vector<std::string> unresolved_functions;
};

// `entries` of one image: one fatbin (a normal program) or several back to back (the client
// sends a linked program's fatbin followed by each translation unit's; fatbins without PTX,
// such as the device-linked cubin, are skipped). ClientErrors: CUDA_ERROR_NO_BINARY_FOR_GPU
// when a fatbin has no PTX the device can run, CUDA_ERROR_INVALID_PTX for a linked program's
// unit whose PTX does not parse, CUDA_ERROR_NOT_FOUND for units that do not link (naming the
// symbol).
absl::StatusOr<DeviceCode> SelectDeviceCode(std::span<const ptx::FatbinEntry> entries,
                                            uint32_t device_arch);

}  // namespace tally::server
