// The bytes of the fatbin that __cudaRegisterFatBinary's wrapper points to. The shim may not
// link ptx_transform (ARCHITECTURE.md: the client stays small), so it reads only the two headers
// needed for the size; the server parses the content.
#pragma once

#include <cstddef>
#include <span>

#include "absl/status/statusor.h"

namespace tally::client {

absl::StatusOr<std::span<const std::byte>> FatbinImage(const void* wrapper);

}  // namespace tally::client
