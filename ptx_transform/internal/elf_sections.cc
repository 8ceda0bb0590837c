// Reads the ELF64 section header table (System V gABI, "Sections") with every offset checked.
#include "ptx_transform/internal/elf_sections.h"

#include <algorithm>

#include "common/status.h"
#include "ptx_transform/internal/byte_reader.h"

namespace tally::ptx::internal {
namespace {

constexpr uint64_t kElfHeaderSize = 64;
constexpr uint64_t kSectionHeaderSize = 64;
constexpr uint16_t kSectionIndexEscape = 0xffff;  // SHN_XINDEX: the real index is elsewhere

struct RawSectionHeader {
  uint32_t name = 0;
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
};

absl::StatusOr<RawSectionHeader> ReadSectionHeader(std::span<const uint8_t> elf, uint64_t offset) {
  if (!FitsIn(offset, kSectionHeaderSize, elf.size())) {
    return absl::OutOfRangeError(absl::StrCat("ELF section header at offset 0x", absl::Hex(offset),
                                              " lies past the end of the file"));
  }
  ByteReader reader(elf.subspan(offset, kSectionHeaderSize), offset);
  RawSectionHeader header;
  header.name = reader.U32();
  header.type = reader.U32();
  reader.Skip(16);  // sh_flags, sh_addr
  header.offset = reader.U64();
  header.size = reader.U64();
  header.link = reader.U32();
  header.info = reader.U32();
  return header;
}

// The NUL-terminated string at `offset` inside the section-name table.
absl::StatusOr<std::string> SectionName(std::span<const uint8_t> names, uint32_t offset) {
  if (offset >= names.size()) {
    return absl::OutOfRangeError(
        absl::StrCat("ELF section name offset ", offset, " is outside the name table"));
  }
  auto begin = names.begin() + offset;
  auto end = std::find(begin, names.end(), uint8_t{0});
  if (end == names.end()) {
    return absl::OutOfRangeError("ELF section name is not NUL-terminated");
  }
  return std::string(begin, end);
}

}  // namespace

bool IsElf(std::span<const uint8_t> bytes) {
  return bytes.size() >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
         bytes[3] == 'F';
}

absl::StatusOr<std::vector<ElfSection>> ReadElfSections(std::span<const uint8_t> elf) {
  if (!IsElf(elf)) return absl::InvalidArgumentError("not an ELF file (bad magic)");
  if (elf.size() < kElfHeaderSize) return absl::OutOfRangeError("ELF header is truncated");
  if (elf[4] != 2 || elf[5] != 1) {
    return absl::UnimplementedError("only little-endian ELF64 files are supported");
  }
  ByteReader reader(elf);
  reader.Seek(40);
  const uint64_t table_offset = reader.U64();  // e_shoff
  reader.Seek(58);
  const uint16_t entry_size = reader.U16();                 // e_shentsize
  uint64_t count = reader.U16();                            // e_shnum
  uint32_t names_index = reader.U16();                      // e_shstrndx
  if (table_offset == 0) return std::vector<ElfSection>{};  // stripped of its section table
  if (entry_size < kSectionHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("ELF section header size ", entry_size, " is smaller than ELF64's 64"));
  }
  // Files with 0xff00 or more sections keep the real counts in section 0 (gABI "Sections").
  TALLY_ASSIGN_OR_RETURN(const RawSectionHeader first, ReadSectionHeader(elf, table_offset));
  if (count == 0) count = first.size;
  if (names_index == kSectionIndexEscape) names_index = first.link;
  if (count > elf.size() / entry_size || !FitsIn(table_offset, count * entry_size, elf.size())) {
    return absl::OutOfRangeError(
        absl::StrCat("ELF section table (", count, " entries) lies past the end of the file"));
  }
  if (names_index >= count) {
    return absl::OutOfRangeError(
        absl::StrCat("ELF section-name table index ", names_index, " is out of range"));
  }

  std::vector<RawSectionHeader> headers;
  headers.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    TALLY_ASSIGN_OR_RETURN(RawSectionHeader header,
                           ReadSectionHeader(elf, table_offset + i * entry_size));
    if (header.type != kElfSectionNoBits && !FitsIn(header.offset, header.size, elf.size())) {
      return absl::OutOfRangeError(absl::StrCat("ELF section ", i, " (offset 0x",
                                                absl::Hex(header.offset), ", size ", header.size,
                                                ") lies past the end of the file"));
    }
    headers.push_back(header);
  }
  const RawSectionHeader& names_header = headers[names_index];
  if (names_header.type == kElfSectionNoBits) {
    return absl::InvalidArgumentError("ELF section-name table has no contents");
  }
  const std::span<const uint8_t> names = elf.subspan(names_header.offset, names_header.size);

  std::vector<ElfSection> sections;
  sections.reserve(count);
  for (const RawSectionHeader& header : headers) {
    ElfSection section;
    TALLY_ASSIGN_OR_RETURN(section.name, SectionName(names, header.name));
    section.type = header.type;
    section.link = header.link;
    section.info = header.info;
    section.file_offset = header.offset;
    if (header.type != kElfSectionNoBits) section.data = elf.subspan(header.offset, header.size);
    sections.push_back(std::move(section));
  }
  return sections;
}

}  // namespace tally::ptx::internal
