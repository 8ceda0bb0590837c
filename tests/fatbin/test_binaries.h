// Loading the nvcc-built binaries of tests/fatbin/CMakeLists.txt for the fatbin reader tests.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptx_transform/fatbin.h"
#include "ptx_transform/internal/elf_sections.h"

namespace tally::ptx::testing {

// The bytes of test binary `name` (e.g. "default", "libkernels.so").
inline std::vector<uint8_t> LoadTestBinary(const std::string& name) {
  const std::string path = std::string(TALLY_FATBIN_TEST_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open test binary " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The contents of `elf`'s `.nv_fatbin` section: raw fatbins back to back.
inline std::vector<uint8_t> FatbinSection(const std::vector<uint8_t>& elf) {
  auto sections = internal::ReadElfSections(elf);
  if (!sections.ok()) throw std::runtime_error(std::string(sections.status().message()));
  for (const internal::ElfSection& section : *sections) {
    if (section.name == ".nv_fatbin") return {section.data.begin(), section.data.end()};
  }
  throw std::runtime_error("no .nv_fatbin section");
}

inline std::vector<FatbinEntry> OfKind(const std::vector<FatbinEntry>& entries,
                                       FatbinEntryKind kind) {
  std::vector<FatbinEntry> out;
  for (const FatbinEntry& entry : entries) {
    if (entry.kind == kind) out.push_back(entry);
  }
  return out;
}

}  // namespace tally::ptx::testing
