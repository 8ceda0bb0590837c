// Module upload: the images, padded to 8-byte boundaries, are one logical byte string that is
// hashed first (the server checks it against every piece) and then sent piece by piece.
#include "client/module_upload.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/copy.h"
#include "client/status.h"
#include "common/status.h"
#include "ipc/content_hash.h"

namespace tally::client {
namespace {

size_t AlignImage(size_t offset) { return (offset + 7) / 8 * 8; }

// The images as one byte string: each starts at the next 8-byte boundary, zeros in between.
class ImageBytes {
 public:
  explicit ImageBytes(std::span<const std::span<const std::byte>> images) : images_(images) {
    for (std::span<const std::byte> image : images) size_ = AlignImage(size_) + image.size();
  }
  size_t size() const { return size_; }

  // Copies the bytes at [offset, offset + out.size()) to `out`.
  void Read(size_t offset, std::span<std::byte> out) const {
    std::memset(out.data(), 0, out.size());
    size_t start = 0;
    for (std::span<const std::byte> image : images_) {
      start = AlignImage(start);
      const size_t end = start + image.size();
      const size_t from = std::max(start, offset);
      const size_t to = std::min(end, offset + out.size());
      if (from < to) {
        std::memcpy(out.data() + (from - offset), image.data() + (from - start), to - from);
      }
      start = end;
    }
  }

  uint64_t Hash() const {
    static constexpr std::array<std::byte, 8> kZeros{};
    uint64_t hash = ipc::kContentHashBasis;
    size_t offset = 0;
    for (std::span<const std::byte> image : images_) {
      hash = ipc::ContentHash(std::span(kZeros).first(AlignImage(offset) - offset), hash);
      hash = ipc::ContentHash(image, hash);
      offset = AlignImage(offset) + image.size();
    }
    return hash;
  }

 private:
  std::span<const std::span<const std::byte>> images_;
  size_t size_ = 0;
};

}  // namespace

absl::StatusOr<uint64_t> RegisterImages(std::span<const std::span<const std::byte>> images) {
  const ImageBytes bytes(images);
  if (bytes.size() == 0 || bytes.size() > ipc::kMaxModuleImage) {
    return CudaError(cudaErrorInvalidValue,
                     absl::StrFormat("a module image of %d bytes (the limit is %d)", bytes.size(),
                                     ipc::kMaxModuleImage));
  }
  const uint64_t hash = bytes.Hash();
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  // The server assembles one image at a time per client.
  static std::mutex upload_mutex;
  std::lock_guard lock(upload_mutex);
  uint64_t module = 0;
  for (size_t offset = 0; offset < bytes.size();) {
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(*channel, bytes.size() - offset));
    bytes.Read(offset, channel->bulk().Bytes(block));
    auto answer = channel->Call(ipc::RegisterFatbinRequest{
        .content_hash = hash, .image_size = bytes.size(), .offset = offset, .piece = block});
    channel->bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    offset += block.size;
    module = answer->fields.module;
  }
  if (module == 0) return absl::DataLossError("the server answered a whole image with no module");
  return module;
}

}  // namespace tally::client
