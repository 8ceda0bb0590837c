// The fatbins a registration wrapper names: its own, plus the translation units' fatbins that
// a program linked with -rdc=true lists in a version 2 wrapper; foreign pointers are refused.
#include "client/fatbin_image.h"

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
}  // namespace tally::client
