// Layouts as nvcc emits them (fatbinary_section.h: __fatBinC_Wrapper_t; the fatbin header that
// its `data` points to). Both magics are checked so that a foreign pointer is refused rather
// than read past.
#include "client/fatbin_image.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"
#include "client/status.h"
#include "common/status.h"

namespace tally::client {
namespace {

constexpr int32_t kWrapperMagic = 0x466243b1;
constexpr uint32_t kFatbinMagic = 0xba55ed50;
// Sanity bound on a single fatbin; larger ones would not fit the bulk area anyway.
constexpr uint64_t kMaxFatbinSize = uint64_t{1} << 32;
// Wrapper version whose second pointer lists the prelinked fatbins of -rdc=true programs.
constexpr int32_t kLinkedWrapperVersion = 2;
// Sanity bound on that list (one per translation unit with device code).
constexpr size_t kMaxLinkedFatbins = 1 << 16;

struct Wrapper {
  int32_t magic;
  int32_t version;
  const void* data;
  const void* filename_or_fatbins;
};

struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t fat_size;  // bytes after the header
};

// Whether `bytes` starts with `prefix`, reading no further than the first mismatch (a short
// PTX string must not be read past its NUL).
bool StartsWith(const void* bytes, const void* prefix, size_t size) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  const auto* p = static_cast<const unsigned char*>(prefix);
  for (size_t i = 0; i < size; ++i) {
    if (b[i] != p[i]) return false;
  }
  return true;
}

absl::StatusOr<std::span<const std::byte>> FatbinAt(const void* data) {
  FatbinHeader header;
  std::memcpy(&header, data, sizeof(header));
  if (header.magic != kFatbinMagic || header.header_size < sizeof(header) ||
      header.fat_size > kMaxFatbinSize) {
    return CudaError(cudaErrorInvalidKernelImage, "the wrapper does not point to a fatbin");
  }
  return std::span<const std::byte>(static_cast<const std::byte*>(data),
                                    header.header_size + header.fat_size);
}

}  // namespace

absl::StatusOr<std::vector<std::span<const std::byte>>> FatbinImages(const void* wrapper) {
  if (wrapper == nullptr) return CudaError(cudaErrorInvalidKernelImage, "null fatbin wrapper");
  Wrapper w;
  std::memcpy(&w, wrapper, sizeof(w));
  if (w.magic != kWrapperMagic || w.data == nullptr) {
    return CudaError(cudaErrorInvalidKernelImage,
                     absl::StrFormat("fatbin wrapper magic 0x%x is not nvcc's", w.magic));
  }
  std::vector<std::span<const std::byte>> images;
  TALLY_ASSIGN_OR_RETURN(images.emplace_back(), FatbinAt(w.data));
  if (w.version != kLinkedWrapperVersion || w.filename_or_fatbins == nullptr) return images;
  const auto* units = static_cast<const void* const*>(w.filename_or_fatbins);
  for (size_t i = 0; units[i] != nullptr; ++i) {
    if (i == kMaxLinkedFatbins) {
      return CudaError(cudaErrorInvalidKernelImage, "the list of linked fatbins does not end");
    }
    TALLY_ASSIGN_OR_RETURN(images.emplace_back(), FatbinAt(units[i]));
  }
  return images;
}

absl::StatusOr<std::vector<std::span<const std::byte>>> ModuleImages(const void* image) {
  if (image == nullptr) return CudaError(cudaErrorInvalidValue, "null module image");
  if (StartsWith(image, &kWrapperMagic, sizeof(kWrapperMagic))) return FatbinImages(image);
  std::vector<std::span<const std::byte>> images;
  if (StartsWith(image, &kFatbinMagic, sizeof(kFatbinMagic))) {
    TALLY_ASSIGN_OR_RETURN(images.emplace_back(), FatbinAt(image));
    return images;
  }
  if (StartsWith(image,
                 "\x7f"
                 "ELF",
                 4)) {
    return DriverError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       "the module image is a cubin (machine code only): Tally loads device code "
                       "as PTX, so load PTX text or a fatbin that contains PTX");
  }
  const char* text = static_cast<const char*>(image);
  images.push_back(std::as_bytes(std::span(text, std::strlen(text) + 1)));
  return images;
}

}  // namespace tally::client
