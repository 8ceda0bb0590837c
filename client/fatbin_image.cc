// Layouts as nvcc emits them (fatbinary_section.h: __fatBinC_Wrapper_t; the fatbin header that
// its `data` points to). Both magics are checked so that a foreign pointer is refused rather
// than read past.
#include "client/fatbin_image.h"

#include <elf.h>

#include <algorithm>
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

// A cubin's bytes: an ELF64 file ends with the last of its headers, sections and segments.
absl::StatusOr<std::span<const std::byte>> CubinAt(const void* data) {
  const auto* bytes = static_cast<const std::byte*>(data);
  Elf64_Ehdr header;
  std::memcpy(&header, bytes, sizeof(header));
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr) ||
      (header.e_phnum != 0 && header.e_phentsize != sizeof(Elf64_Phdr)) ||
      header.e_shoff > kMaxFatbinSize || header.e_phoff > kMaxFatbinSize) {
    return DriverError(CUDA_ERROR_INVALID_IMAGE, "the module image is not a 64-bit cubin");
  }
  uint64_t end = std::max<uint64_t>({sizeof(header),
                                     header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr),
                                     header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr)});
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    std::memcpy(&section, bytes + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(section));
    if (section.sh_type != SHT_NOBITS) end = std::max(end, section.sh_offset + section.sh_size);
  }
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, bytes + header.e_phoff + i * sizeof(Elf64_Phdr), sizeof(segment));
    end = std::max(end, segment.p_offset + segment.p_filesz);
  }
  if (end > kMaxFatbinSize) {
    return DriverError(CUDA_ERROR_INVALID_IMAGE, "the cubin's headers name offsets past 4 GiB");
  }
  return std::span<const std::byte>(bytes, end);
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
  if (StartsWith(image, ELFMAG, SELFMAG)) {
    TALLY_ASSIGN_OR_RETURN(images.emplace_back(), CubinAt(image));
    return images;
  }
  const char* text = static_cast<const char*>(image);
  images.push_back(std::as_bytes(std::span(text, std::strlen(text) + 1)));
  return images;
}

}  // namespace tally::client
