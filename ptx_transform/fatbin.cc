// Walks fatbin containers entry by entry with every size checked against the bytes it claims.
//
// Layout, as nvcc 13 writes it (CUDA's headers only publish the wrapper and section names; the
// rest was determined by inspecting nvcc output, see tests/fatbin/):
//   fatbin header: u32 magic 0xBA55ED50, u16 version 1, u16 header size (16), u64 size of the
//                  entries that follow the header.
//   entry header:  0 u16 kind (1 PTX, 2 ELF cubin), 2 u16 format (0x0101), 4 u32 header size,
//                  8 u64 payload size (padded to 8), 16 u32 compressed size (0 if stored plain),
//                  20 u32 offset of an options descriptor inside this header (0 if none),
//                  24 u16 minor, 26 u16 major version, 28 u32 arch, 32 u32 x2 (unused),
//                  40 u64 flags, 48 u64 (unused), 56 u64 decompressed size; extensions up to the
//                  header size. Options descriptor: u32 offset, u32 length of the text, both
//                  relative to the entry header.
//   payload:       follows the entry header; the next entry follows the payload.
#include "ptx_transform/fatbin.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "ptx_transform/internal/byte_reader.h"
#include "ptx_transform/internal/decompress.h"
#include "ptx_transform/internal/elf_sections.h"

namespace tally::ptx {
namespace {

using internal::AtOffset;
using internal::ByteReader;

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint32_t kWrapperMagic = 0x466243B1;
constexpr uint16_t kFatbinVersion = 1;
constexpr uint64_t kFatbinHeaderSize = 16;
constexpr uint32_t kEntryFixedHeaderSize = 64;
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindCubin = 2;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr uint64_t kFlagArchSpecific = 0x100000;
constexpr uint64_t kFlagFamilySpecific = 0x200000;
// An in-process fatbin larger than this is a corrupt header, not a real module.
constexpr uint64_t kMaxWrappedFatbinSize = uint64_t{1} << 40;

constexpr std::string_view kFatbinSection = ".nv_fatbin";
constexpr std::string_view kRelocatableFatbinSection = "__nv_relfatbin";

// Decoded fixed part of an entry header, before the payload is looked at.
struct EntryHeader {
  uint16_t kind = 0;
  uint32_t header_size = 0;
  uint64_t payload_size = 0;
  uint32_t compressed_size = 0;
  uint32_t options_descriptor = 0;
  uint16_t minor = 0;
  uint16_t major = 0;
  uint32_t arch = 0;
  uint64_t flags = 0;
  uint64_t decompressed_size = 0;
};

EntryHeader DecodeEntryHeader(ByteReader& header) {
  EntryHeader out;
  out.kind = header.U16();
  header.Skip(2);  // format version
  out.header_size = header.U32();
  out.payload_size = header.U64();
  out.compressed_size = header.U32();
  out.options_descriptor = header.U32();
  out.minor = header.U16();
  out.major = header.U16();
  out.arch = header.U32();
  header.Skip(8);
  out.flags = header.U64();
  header.Skip(8);
  out.decompressed_size = header.U64();
  return out;
}

// The ptxas options text that some PTX entries carry inside their header (e.g. -rdc's
// `--compile-only`); offsets are relative to the entry header, so they must stay inside it.
absl::StatusOr<std::string> ReadOptions(std::span<const uint8_t> header_bytes,
                                        uint32_t descriptor_offset) {
  if (descriptor_offset == 0) return std::string();
  ByteReader header(header_bytes);
  header.Seek(descriptor_offset);
  const uint32_t text_offset = header.U32();
  const uint32_t text_size = header.U32();
  header.Seek(text_offset);
  const std::span<const uint8_t> text = header.Bytes(text_size);
  if (!header.ok()) {
    return absl::OutOfRangeError(absl::StrCat("options descriptor points outside the ",
                                              header_bytes.size(), "-byte entry header"));
  }
  absl::string_view view(reinterpret_cast<const char*>(text.data()), text.size());
  view = view.substr(0, view.find('\0'));
  return std::string(absl::StripTrailingAsciiWhitespace(view));
}

absl::StatusOr<FatbinCompression> CompressionOf(uint64_t flags) {
  const bool lz4 = (flags & kFlagLz4) != 0;
  const bool zstd = (flags & kFlagZstd) != 0;
  if (lz4 && zstd) return absl::InvalidArgumentError("flags claim both LZ4 and zstd compression");
  if (lz4) return FatbinCompression::kLz4;
  if (zstd) return FatbinCompression::kZstd;
  return FatbinCompression::kNone;
}

absl::StatusOr<std::string> DecodePayload(const EntryHeader& header, FatbinCompression compression,
                                          std::span<const uint8_t> stored) {
  if (compression == FatbinCompression::kNone) return std::string(stored.begin(), stored.end());
  if (header.compressed_size == 0 || header.compressed_size > stored.size()) {
    return absl::OutOfRangeError(absl::StrCat("compressed size ", header.compressed_size,
                                              " does not fit the ", stored.size(),
                                              "-byte payload"));
  }
  const std::span<const uint8_t> compressed = stored.first(header.compressed_size);
  return compression == FatbinCompression::kZstd
             ? internal::DecompressZstd(compressed, header.decompressed_size)
             : internal::DecompressLz4(compressed, header.decompressed_size);
}

// Reads the entry at the body reader's position and advances past its payload.
absl::StatusOr<FatbinEntry> ReadEntry(ByteReader& body) {
  FatbinEntry entry;
  entry.entry_offset = body.absolute_position();
  ByteReader peek = body;
  peek.Skip(4);
  const uint32_t header_size = peek.U32();
  TALLY_RETURN_IF_ERROR(peek.status());
  if (header_size < kEntryFixedHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat("header size ", header_size,
                                                   " is smaller than the fixed ",
                                                   kEntryFixedHeaderSize, " bytes"));
  }
  const std::span<const uint8_t> header_bytes = body.Bytes(header_size);
  TALLY_RETURN_IF_ERROR(body.status());
  ByteReader header_reader(header_bytes, entry.entry_offset);
  const EntryHeader header = DecodeEntryHeader(header_reader);
  TALLY_RETURN_IF_ERROR(header_reader.status());

  const std::span<const uint8_t> stored = body.Bytes(header.payload_size);
  if (!body.ok()) {
    return absl::OutOfRangeError(
        absl::StrCat("payload of ", header.payload_size, " bytes runs past the end of its fatbin"));
  }
  entry.raw_kind = header.kind;
  entry.kind = header.kind == kKindPtx     ? FatbinEntryKind::kPtx
               : header.kind == kKindCubin ? FatbinEntryKind::kCubin
                                           : FatbinEntryKind::kOther;
  entry.arch = header.arch;
  entry.arch_specific = (header.flags & kFlagArchSpecific) != 0;
  entry.family_specific = (header.flags & kFlagFamilySpecific) != 0;
  entry.major_version = header.major;
  entry.minor_version = header.minor;
  entry.flags = header.flags;
  entry.stored_size = header.payload_size;
  TALLY_ASSIGN_OR_RETURN(entry.compression, CompressionOf(header.flags));
  TALLY_ASSIGN_OR_RETURN(entry.ptxas_options, ReadOptions(header_bytes, header.options_descriptor));
  TALLY_ASSIGN_OR_RETURN(entry.payload, DecodePayload(header, entry.compression, stored));
  // PTX is stored as a C string padded to 8 bytes; the text ends at the first NUL.
  if (const size_t nul = entry.payload.find('\0');
      entry.kind == FatbinEntryKind::kPtx && nul != std::string::npos) {
    entry.payload.resize(nul);
  }
  return entry;
}

// Reads the fatbin whose header is at `reader`'s position and leaves the reader after it.
absl::Status ReadOneFatbin(ByteReader& reader, std::string_view section, uint32_t index,
                           std::vector<FatbinEntry>& out) {
  const uint64_t fatbin_offset = reader.absolute_position();
  const uint32_t magic = reader.U32();
  TALLY_RETURN_IF_ERROR(reader.status());
  if (magic == kWrapperMagic) {
    return absl::InvalidArgumentError(
        "found a __fatBinC_Wrapper_t, which only points to a fatbin in a running process");
  }
  if (magic != kFatbinMagic) {
    return absl::InvalidArgumentError(absl::StrCat("bad magic 0x", absl::Hex(magic)));
  }
  const uint16_t version = reader.U16();
  const uint16_t header_size = reader.U16();
  const uint64_t body_size = reader.U64();
  TALLY_RETURN_IF_ERROR(reader.status());
  if (version != kFatbinVersion) {
    return absl::UnimplementedError(absl::StrCat("unsupported fatbin version ", version));
  }
  if (header_size < kFatbinHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("header size ", header_size, " is smaller than ", kFatbinHeaderSize));
  }
  reader.Skip(header_size - kFatbinHeaderSize);
  const uint64_t body_offset = reader.absolute_position();
  const std::span<const uint8_t> body_bytes = reader.Bytes(body_size);
  if (!reader.ok()) {
    return absl::OutOfRangeError(
        absl::StrCat("fatbin of ", body_size, " bytes runs past the end of its input"));
  }
  ByteReader body(body_bytes, body_offset);
  while (body.remaining() > 0) {
    const uint64_t entry_offset = body.absolute_position();
    absl::StatusOr<FatbinEntry> entry = ReadEntry(body);
    if (!entry.ok()) return AtOffset(entry.status(), "fatbin entry", entry_offset);
    entry->section = std::string(section);
    entry->fatbin_index = index;
    entry->fatbin_offset = fatbin_offset;
    out.push_back(*std::move(entry));
  }
  return absl::OkStatus();
}

// Reads the fatbins stored back to back in `region` (whose first byte is at `base` in the whole
// input), skipping the zero padding a linker may put between them.
absl::Status ReadFatbinRegion(std::span<const uint8_t> region, uint64_t base,
                              std::string_view section, uint32_t& next_index,
                              std::vector<FatbinEntry>& out) {
  ByteReader reader(region, base);
  while (true) {
    while (reader.remaining() > 0 && region[reader.position()] == 0) reader.Skip(1);
    if (reader.remaining() == 0) return absl::OkStatus();
    const uint64_t fatbin_offset = reader.absolute_position();
    TALLY_RETURN_IF_ERROR(
        AtOffset(ReadOneFatbin(reader, section, next_index, out), "fatbin", fatbin_offset));
    ++next_index;
  }
}

}  // namespace

std::string_view ToString(FatbinEntryKind kind) {
  switch (kind) {
    case FatbinEntryKind::kPtx:
      return "ptx";
    case FatbinEntryKind::kCubin:
      return "cubin";
    case FatbinEntryKind::kOther:
      break;
  }
  return "other";
}

std::string_view ToString(FatbinCompression compression) {
  switch (compression) {
    case FatbinCompression::kLz4:
      return "lz4";
    case FatbinCompression::kZstd:
      return "zstd";
    case FatbinCompression::kNone:
      break;
  }
  return "none";
}

absl::StatusOr<std::vector<FatbinEntry>> ReadFatbin(std::span<const uint8_t> bytes) {
  std::vector<FatbinEntry> entries;
  uint32_t next_index = 0;
  TALLY_RETURN_IF_ERROR(ReadFatbinRegion(bytes, 0, "", next_index, entries));
  return entries;
}

absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinsFromElf(std::span<const uint8_t> elf) {
  TALLY_ASSIGN_OR_RETURN(const std::vector<internal::ElfSection> sections,
                         internal::ReadElfSections(elf));
  std::vector<FatbinEntry> entries;
  uint32_t next_index = 0;
  for (const internal::ElfSection& section : sections) {
    if (section.name != kFatbinSection && section.name != kRelocatableFatbinSection) continue;
    absl::Status status =
        ReadFatbinRegion(section.data, section.file_offset, section.name, next_index, entries);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("section ", section.name, ": ", status.message()));
    }
  }
  return entries;
}

absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinFile(std::span<const uint8_t> bytes) {
  return internal::IsElf(bytes) ? ReadFatbinsFromElf(bytes) : ReadFatbin(bytes);
}

absl::StatusOr<std::span<const uint8_t>> FatbinWrapperImage(const void* wrapper) {
  // __fatBinC_Wrapper_t from CUDA's fatbinary_section.h; mirrored so that we need no CUDA
  // header. Version 2 (FATBINC_LINK_VERSION, -rdc) differs only in its last field.
  struct WrapperLayout {
    int32_t magic;
    int32_t version;
    const uint8_t* data;
    const void* filename_or_fatbins;
  };
  if (wrapper == nullptr) return absl::InvalidArgumentError("null fatbin wrapper");
  WrapperLayout layout;
  std::memcpy(&layout, wrapper, sizeof(layout));
  if (static_cast<uint32_t>(layout.magic) != kWrapperMagic) {
    return absl::InvalidArgumentError(absl::StrCat("bad fatbin wrapper magic 0x",
                                                   absl::Hex(static_cast<uint32_t>(layout.magic))));
  }
  if (layout.version != 1 && layout.version != 2) {
    return absl::UnimplementedError(
        absl::StrCat("unsupported fatbin wrapper version ", layout.version));
  }
  if (layout.data == nullptr) return absl::InvalidArgumentError("fatbin wrapper has no data");
  ByteReader header({layout.data, kFatbinHeaderSize});
  const uint32_t magic = header.U32();
  header.Skip(2);
  const uint16_t header_size = header.U16();
  const uint64_t body_size = header.U64();
  if (magic != kFatbinMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("fatbin wrapper points to bad magic 0x", absl::Hex(magic)));
  }
  if (header_size < kFatbinHeaderSize || body_size > kMaxWrappedFatbinSize) {
    return absl::InvalidArgumentError(absl::StrCat("implausible fatbin header: header size ",
                                                   header_size, ", body size ", body_size));
  }
  return std::span<const uint8_t>(layout.data, header_size + body_size);
}

absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinWrapper(const void* wrapper) {
  TALLY_ASSIGN_OR_RETURN(const std::span<const uint8_t> image, FatbinWrapperImage(wrapper));
  return ReadFatbin(image);
}

const FatbinEntry* SelectPtxForArch(std::span<const FatbinEntry> entries, uint32_t device_arch) {
  const FatbinEntry* best = nullptr;
  for (const FatbinEntry& entry : entries) {
    if (entry.kind != FatbinEntryKind::kPtx || entry.arch > device_arch) continue;
    if (entry.arch_specific && entry.arch != device_arch) continue;
    if (entry.family_specific && entry.arch / 10 != device_arch / 10) continue;
    if (best == nullptr || entry.arch > best->arch) best = &entry;
  }
  return best;
}

}  // namespace tally::ptx
