// The fatbins a registration wrapper names: its own, plus the translation units' fatbins that
// a program linked with -rdc=true lists in a version 2 wrapper; foreign pointers are refused.
// cuModuleLoadData's cubins: sized by their ELF headers.
#include "client/fatbin_image.h"

#include <elf.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tally::client {
namespace {

// A fatbin header (magic, version, header size, payload size) followed by `payload` bytes.
std::vector<uint64_t> MakeFatbin(uint64_t payload) {
  std::vector<uint64_t> words(2 + payload / 8, 0);
  const uint32_t magic = 0xba55ed50;
  const uint16_t version = 1, header_size = 16;
  std::memcpy(reinterpret_cast<char*>(words.data()), &magic, 4);
  std::memcpy(reinterpret_cast<char*>(words.data()) + 4, &version, 2);
  std::memcpy(reinterpret_cast<char*>(words.data()) + 6, &header_size, 2);
  words[1] = payload;
  return words;
}

struct Wrapper {
  int32_t magic = 0x466243b1;
  int32_t version = 1;
  const void* data = nullptr;
  const void* filename_or_fatbins = nullptr;
};

TEST_CASE("a normal wrapper gives its one fatbin") {
  const auto fatbin = MakeFatbin(24);
  const Wrapper wrapper{.data = fatbin.data()};
  auto images = FatbinImages(&wrapper);
  REQUIRE(images.ok());
  REQUIRE(images->size() == 1);
  CHECK((*images)[0].data() == reinterpret_cast<const std::byte*>(fatbin.data()));
  CHECK((*images)[0].size() == 16 + 24);
}

TEST_CASE("a linked program's wrapper also gives each translation unit's fatbin") {
  const auto linked = MakeFatbin(8);
  const auto unit_a = MakeFatbin(16);
  const auto unit_b = MakeFatbin(32);
  const void* units[] = {unit_a.data(), unit_b.data(), nullptr};
  const Wrapper wrapper{.version = 2, .data = linked.data(), .filename_or_fatbins = units};
  auto images = FatbinImages(&wrapper);
  REQUIRE(images.ok());
  REQUIRE(images->size() == 3);
  CHECK((*images)[1].data() == reinterpret_cast<const std::byte*>(unit_a.data()));
  CHECK((*images)[2].size() == 16 + 32);

  // A version 1 wrapper's second pointer is not a list of fatbins.
  const Wrapper unlinked{.version = 1, .data = linked.data(), .filename_or_fatbins = units};
  CHECK(FatbinImages(&unlinked)->size() == 1);
}

TEST_CASE("wrappers that point at something else are refused") {
  CHECK_FALSE(FatbinImages(nullptr).ok());
  const auto fatbin = MakeFatbin(8);
  Wrapper bad_magic{.data = fatbin.data()};
  bad_magic.magic = 0x12345678;
  CHECK_FALSE(FatbinImages(&bad_magic).ok());
  const uint64_t garbage[4] = {1, 2, 3, 4};
  const Wrapper not_a_fatbin{.data = garbage};
  CHECK_FALSE(FatbinImages(&not_a_fatbin).ok());
  const void* units[] = {garbage, nullptr};
  const Wrapper bad_unit{.version = 2, .data = fatbin.data(), .filename_or_fatbins = units};
  CHECK_FALSE(FatbinImages(&bad_unit).ok());
}

}  // namespace
// An ELF64 file of `size` bytes: a 64-byte data section at 0x100, the section headers at
// `headers` (null section, the data section, a NOBITS section claiming 1 MiB at 0x1000).
std::vector<std::byte> MakeCubin(size_t size, uint64_t headers) {
  std::vector<std::byte> file(size);
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_shoff = headers;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 3;
  std::memcpy(file.data(), &header, sizeof(header));
  Elf64_Shdr sections[3]{};
  sections[1].sh_type = SHT_PROGBITS;
  sections[1].sh_offset = 0x100;
  sections[1].sh_size = 64;
  sections[2].sh_type = SHT_NOBITS;
  sections[2].sh_offset = 0x1000;
  sections[2].sh_size = 1 << 20;
  std::memcpy(file.data() + headers, sections, sizeof(sections));
  return file;
}

TEST_CASE("a cubin's size is where its last header or section ends") {
  // Headers after the data: they end the file.
  const std::vector<std::byte> trailing = MakeCubin(0x200 + 3 * sizeof(Elf64_Shdr), 0x200);
  auto images = ModuleImages(trailing.data());
  REQUIRE(images.ok());
  REQUIRE(images->size() == 1);
  CHECK(images->front().size() == trailing.size());
  // Headers before the data: the data section ends the file; a NOBITS section takes no bytes.
  const std::vector<std::byte> leading = MakeCubin(0x140, 0x40);
  images = ModuleImages(leading.data());
  REQUIRE(images.ok());
  CHECK(images->front().size() == 0x140);
}

TEST_CASE("a 32-bit ELF file is no cubin") {
  std::vector<std::byte> file = MakeCubin(0x400, 0x200);
  file[EI_CLASS] = std::byte{ELFCLASS32};
  CHECK_FALSE(ModuleImages(file.data()).ok());
}

}  // namespace tally::client
