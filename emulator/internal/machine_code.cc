// The emulated GPU's machine-code images (machine_code.h): made and checked.
#include "emulator/internal/machine_code.h"

#include <cstring>

#include "emulator/internal/cuda_status.h"

namespace tally::emu {
namespace {

// A control byte first: no PTX text starts so, which tells a damaged image from PTX text.
constexpr char kMagic[8] = {'\x1b', 'T', 'E', 'M', 'U', 'B', 'I', 'N'};

struct Header {
  char magic[8];
  uint32_t arch;
  uint32_t reserved;
  uint64_t ptx_size;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 32);

uint64_t Checksum(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

}  // namespace

bool IsMachineCode(const void* image) {
  return image != nullptr && std::memcmp(image, kMagic, sizeof(kMagic)) == 0;
}

std::string MakeMachineCode(std::string_view ptx, uint32_t arch) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.arch = arch;
  header.ptx_size = ptx.size();
  header.checksum = Checksum(ptx);
  std::string image(reinterpret_cast<const char*>(&header), sizeof(header));
  image.append(ptx);
  image.push_back('\0');
  return image;
}

absl::StatusOr<std::string_view> MachineCodePtx(const void* image, uint32_t arch) {
  if (!IsMachineCode(image)) {
    return CudaError(CUDA_ERROR_INVALID_IMAGE, "not the emulated GPU's machine code");
  }
  Header header;
  std::memcpy(&header, image, sizeof(header));
  if (header.reserved != 0) {
    return CudaError(CUDA_ERROR_INVALID_IMAGE, "machine code with a damaged header");
  }
  // The text must reach its declared size: a NUL before it is an image cut short (cuModuleLoadData
  // gets no size, so the NUL after the text is what bounds the read).
  const char* text = static_cast<const char*>(image) + sizeof(header);
  const size_t length = strnlen(text, header.ptx_size + 1);
  if (length != header.ptx_size) {
    return CudaError(CUDA_ERROR_INVALID_IMAGE, "machine code cut short");
  }
  const std::string_view ptx(text, length);
  if (Checksum(ptx) != header.checksum) {
    return CudaError(CUDA_ERROR_INVALID_IMAGE, "machine code whose checksum does not match");
  }
  if (header.arch != arch) {
    return CudaError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                     "machine code for sm_" + std::to_string(header.arch) + ", the device is sm_" +
                         std::to_string(arch));
  }
  return ptx;
}

}  // namespace tally::emu
