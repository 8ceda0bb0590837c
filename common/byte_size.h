// Sizes as operators write them on command lines: 512M, 4G, 1.5GiB, 1048576.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally {

// Bytes in `text`: a non-negative number (decimals allowed) with an optional unit K, M, G, T,
// each also as KiB/MiB/GiB/TiB or KB/MB/GB/TB and all meaning powers of 1024 (as nvidia-smi and
// the CUDA documentation count memory), or B or nothing for bytes. Case-insensitive. A result
// that is not a whole number of bytes is rounded down. InvalidArgument naming `text` otherwise.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

// "512 MiB", "1.50 GiB", "1000 bytes": for messages.
std::string FormatByteSize(uint64_t bytes);

}  // namespace tally
