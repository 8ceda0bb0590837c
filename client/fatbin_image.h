// The bytes of the fatbins that __cudaRegisterFatBinary's wrapper points to, and of the images
// cuModuleLoadData takes (which come without a size). The shim may not
// link ptx_transform (ARCHITECTURE.md: the client stays small), so it reads only the headers
// needed for the size; the server parses the content.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::client {

// The wrapper's fatbin, then, for a program linked with `nvcc -rdc=true` (a version 2 wrapper,
// crt/link.stub), the fatbin of each translation unit that its NULL-terminated list names:
// the linked fatbin holds only cubins, the units' fatbins hold the PTX the server links.
absl::StatusOr<std::vector<std::span<const std::byte>>> FatbinImages(const void* wrapper);

// The bytes of a cuModuleLoadData image: a fatbin wrapper's fatbins (as FatbinImages), a
// fatbin, a cubin (its size read from its ELF headers), or PTX text with its NUL (CUDA Driver
// API, cuModuleLoadData).
absl::StatusOr<std::vector<std::span<const std::byte>>> ModuleImages(const void* image);

}  // namespace tally::client
