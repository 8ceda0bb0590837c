// Decodes `.nv.info.<kernel>` attribute records. Encoding, determined from nvcc 13 cubins (CUDA
// documents only the attribute names, via cuobjdump -elf): records follow each other 4-byte
// aligned, each `u8 format, u8 attribute` then
//   format 1 (no value), 2 (byte value), 3 (u16 value): the value in the next 2 bytes;
//   format 4 (sized): u16 size, then `size` bytes.
// EIATTR_KPARAM_INFO (0x17, sized 12): u32 index, u16 ordinal, u16 offset, u32 whose top 14 bits
// are the size. EIATTR_PARAM_CBANK (0x0a, sized 8): u32 symbol, u16 offset, u16 size.
// EIATTR_CBANK_PARAM_SIZE (0x19, u16 value).
#include "ptx_transform/cubin_info.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "ptx_transform/internal/byte_reader.h"
#include "ptx_transform/internal/elf_sections.h"

namespace tally::ptx {
namespace {

using internal::ByteReader;

constexpr std::string_view kInfoPrefix = ".nv.info.";

constexpr uint8_t kFormatNoValue = 1;
constexpr uint8_t kFormatSized = 4;

constexpr uint8_t kAttrParamCbank = 0x0a;
constexpr uint8_t kAttrKparamInfo = 0x17;
constexpr uint8_t kAttrCbankParamSize = 0x19;

constexpr uint32_t kKparamInfoSize = 12;
constexpr uint32_t kParamCbankSize = 8;
constexpr int kKparamSizeShift = 18;

absl::Status DecodeAttribute(uint8_t attribute, uint16_t inline_value,
                             std::span<const uint8_t> payload, CubinKernelInfo& kernel) {
  ByteReader reader(payload);
  switch (attribute) {
    case kAttrKparamInfo: {
      if (payload.size() < kKparamInfoSize) break;
      CubinParam param;
      reader.Skip(4);
      param.ordinal = reader.U16();
      param.offset = reader.U16();
      param.size = reader.U32() >> kKparamSizeShift;
      kernel.params.push_back(param);
      return absl::OkStatus();
    }
    case kAttrParamCbank:
      if (payload.size() < kParamCbankSize) break;
      reader.Skip(4);
      kernel.param_cbank_offset = reader.U16();
      kernel.param_cbank_size = reader.U16();
      return absl::OkStatus();
    case kAttrCbankParamSize:
      kernel.cbank_param_size = inline_value;
      return absl::OkStatus();
    default:
      return absl::OkStatus();  // attributes we have no use for
  }
  return absl::InvalidArgumentError(absl::StrCat("attribute 0x", absl::Hex(attribute), " has ",
                                                 payload.size(), " bytes, too few"));
}

absl::StatusOr<CubinKernelInfo> ReadKernelInfo(const internal::ElfSection& section) {
  CubinKernelInfo kernel;
  kernel.name = section.name.substr(kInfoPrefix.size());
  ByteReader reader(section.data, section.file_offset);
  while (reader.remaining() > 0) {
    const uint64_t record_offset = reader.absolute_position();
    const uint8_t format = reader.U8();
    const uint8_t attribute = reader.U8();
    const uint16_t value = reader.U16();
    std::span<const uint8_t> payload;
    if (format == kFormatSized) {
      payload = reader.Bytes(value);
    } else if (format < kFormatNoValue || format > kFormatSized) {
      return internal::AtOffset(
          absl::InvalidArgumentError(absl::StrCat("unknown record format ", format)),
          "nv.info record", record_offset);
    }
    TALLY_RETURN_IF_ERROR(internal::AtOffset(reader.status(), "nv.info record", record_offset));
    TALLY_RETURN_IF_ERROR(internal::AtOffset(DecodeAttribute(attribute, value, payload, kernel),
                                             "nv.info record", record_offset));
  }
  std::sort(kernel.params.begin(), kernel.params.end(),
            [](const CubinParam& a, const CubinParam& b) { return a.ordinal < b.ordinal; });
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (kernel.params[i].ordinal != i) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel ", kernel.name, ": parameter ordinals are not 0..", kernel.params.size() - 1));
    }
  }
  return kernel;
}

}  // namespace

absl::StatusOr<std::vector<CubinKernelInfo>> ReadCubinKernelInfo(std::span<const uint8_t> cubin) {
  TALLY_ASSIGN_OR_RETURN(const std::vector<internal::ElfSection> sections,
                         internal::ReadElfSections(cubin));
  std::vector<CubinKernelInfo> kernels;
  for (const internal::ElfSection& section : sections) {
    if (!section.name.starts_with(kInfoPrefix)) continue;
    TALLY_ASSIGN_OR_RETURN(CubinKernelInfo kernel, ReadKernelInfo(section));
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

}  // namespace tally::ptx
