// Decompression of fatbin entry payloads: zstd (CUDA 12.8+ and 13 default) and the LZ4 block
// format (CUDA 11/12 default, and `-compress-mode=speed` in CUDA 13).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace tally::ptx::internal {

// Largest payload we inflate: the biggest real cubins are tens of MB, and a lying header must
// not make us allocate without bound.
inline constexpr uint64_t kMaxDecompressedSize = uint64_t{1} << 30;

// Inflates one or more zstd frames that must produce exactly `expected_size` bytes.
absl::StatusOr<std::string> DecompressZstd(std::span<const uint8_t> compressed,
                                           uint64_t expected_size);

// Inflates one LZ4 block (no frame header) that must produce exactly `expected_size` bytes.
absl::StatusOr<std::string> DecompressLz4(std::span<const uint8_t> compressed,
                                          uint64_t expected_size);

}  // namespace tally::ptx::internal
