// Sends module images (fatbins, or PTX text) to the server, in pieces through the bulk area
// (ipc::RegisterFatbinRequest), so that an image larger than the area still loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"

namespace tally::client {

// Sends a module's images (fatbins, or PTX text with its NUL) to the server as one image: its
// module handle. Several images (an -rdc=true program) go back to back, each 8-byte aligned as
// in a .nv_fatbin section; the server reads them in sequence.
absl::StatusOr<uint64_t> RegisterImages(std::span<const std::span<const std::byte>> images);

}  // namespace tally::client
