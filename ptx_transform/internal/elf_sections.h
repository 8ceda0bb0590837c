// Section table of a little-endian ELF64 file: host executables and shared libraries (to find
// `.nv_fatbin`) and cubins (to find `.nv.info.<kernel>`) share this one bounds-checked reader.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::ptx::internal {

inline constexpr uint32_t kElfSectionNoBits = 8;  // SHT_NOBITS: occupies no file bytes

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t file_offset = 0;
  std::span<const uint8_t> data;  // inside the input; empty for SHT_NOBITS
};

// True when `bytes` starts with the ELF magic.
bool IsElf(std::span<const uint8_t> bytes);

// Every section of `elf`, validated: names inside the section-name table, contents inside the
// file. Other ELF classes and byte orders are an Unimplemented error.
absl::StatusOr<std::vector<ElfSection>> ReadElfSections(std::span<const uint8_t> elf);

}  // namespace tally::ptx::internal
