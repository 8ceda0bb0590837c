// zstd and LZ4 inflation with the claimed size checked before anything is allocated.
#include "ptx_transform/internal/decompress.h"

#include <lz4.h>
#include <zstd.h>

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tally::ptx::internal {
namespace {

// An LZ4 sequence cannot expand one input byte into more than 255 output bytes (each 0xff
// length byte adds 255), so a larger claim is a lie we can refuse without trying.
constexpr uint64_t kMaxLz4Ratio = 256;
// A zstd block yields at most 128 KiB and costs at least 4 bytes (3-byte header, 1 RLE byte).
constexpr uint64_t kMaxZstdRatio = (128 * 1024) / 4;

// Refuses a claimed size before allocating for it: above our cap, or above what `compressed`
// could possibly expand to with `codec`.
absl::Status CheckClaimedSize(uint64_t expected_size, std::span<const uint8_t> compressed,
                              uint64_t max_ratio, absl::string_view codec) {
  if (expected_size > kMaxDecompressedSize) {
    return absl::ResourceExhaustedError(absl::StrCat("claimed decompressed size ", expected_size,
                                                     " exceeds the limit of ",
                                                     kMaxDecompressedSize));
  }
  if (expected_size > compressed.size() * max_ratio) {
    return absl::InvalidArgumentError(absl::StrCat("claimed decompressed size ", expected_size,
                                                   " is impossible for ", compressed.size(),
                                                   " bytes of ", codec));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> DecompressZstd(std::span<const uint8_t> compressed,
                                           uint64_t expected_size) {
  TALLY_RETURN_IF_ERROR(CheckClaimedSize(expected_size, compressed, kMaxZstdRatio, "zstd"));
  // The frame header usually records the content size: comparing it first keeps a lying entry
  // header from costing a large allocation.
  const unsigned long long frame_size =
      ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (frame_size == ZSTD_CONTENTSIZE_ERROR) {
    return absl::InvalidArgumentError("payload is not a zstd frame");
  }
  if (frame_size != ZSTD_CONTENTSIZE_UNKNOWN && frame_size != expected_size) {
    return absl::InvalidArgumentError(absl::StrCat("zstd frame holds ", frame_size,
                                                   " bytes but the entry claims ", expected_size));
  }
  std::string out(expected_size, '\0');
  const size_t produced =
      ZSTD_decompress(out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(produced)) {
    return absl::InvalidArgumentError(
        absl::StrCat("zstd decompression failed: ", ZSTD_getErrorName(produced)));
  }
  if (produced != expected_size) {
    return absl::InvalidArgumentError(absl::StrCat("zstd payload decompressed to ", produced,
                                                   " bytes but the entry claims ", expected_size));
  }
  return out;
}

absl::StatusOr<std::string> DecompressLz4(std::span<const uint8_t> compressed,
                                          uint64_t expected_size) {
  TALLY_RETURN_IF_ERROR(CheckClaimedSize(expected_size, compressed, kMaxLz4Ratio, "LZ4"));
  // The output size is now at most kMaxDecompressedSize and fits liblz4's int; the input's
  // (up to 4 GiB in a lying header) need not.
  if (compressed.size() > INT_MAX) {
    return absl::ResourceExhaustedError("LZ4 payload is larger than liblz4 accepts");
  }
  std::string out(expected_size, '\0');
  const int produced =
      LZ4_decompress_safe(reinterpret_cast<const char*>(compressed.data()), out.data(),
                          static_cast<int>(compressed.size()), static_cast<int>(out.size()));
  if (produced < 0) return absl::InvalidArgumentError("LZ4 payload is malformed");
  if (static_cast<uint64_t>(produced) != expected_size) {
    return absl::InvalidArgumentError(absl::StrCat("LZ4 payload decompressed to ", produced,
                                                   " bytes but the entry claims ", expected_size));
  }
  return out;
}

}  // namespace tally::ptx::internal
