// Corrupted copies of real fatbins, host ELFs and cubins: every read ends in OK or an error Status
// (run this under -DTALLY_SANITIZE=address,undefined to also catch out-of-bounds reads).
#include <catch2/catch.hpp>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "ptx_transform/cubin_info.h"
#include "ptx_transform/fatbin.h"
#include "tests/fatbin/test_binaries.h"

namespace tally::ptx {
namespace {

using testing::FatbinSection;
using testing::LoadTestBinary;

// Little-endian store of the low `width` bytes of `value` at `offset`.
void Store(std::vector<uint8_t>& bytes, uint64_t offset, int width, uint64_t value) {
  for (int i = 0; i < width; ++i) bytes.at(offset + i) = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t Load(const std::vector<uint8_t>& bytes, uint64_t offset, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | bytes.at(offset + i);
  return value;
}

// The .nv_fatbin contents of a build whose entries are all compressed, with their offsets.
struct Fixture {
  std::vector<uint8_t> fatbins;
  std::vector<FatbinEntry> entries;
};

Fixture LoadFixture(const std::string& binary) {
  Fixture fixture{FatbinSection(LoadTestBinary(binary)), {}};
  absl::StatusOr<std::vector<FatbinEntry>> entries = ReadFatbin(fixture.fatbins);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() >= 3);
  fixture.entries = *std::move(entries);
  return fixture;
}

TEST_CASE("truncated fatbins are errors except at fatbin boundaries", "[fatbin][corrupt]") {
  for (const char* binary : {"compress_all", "lz4", "no_compress"}) {
    const Fixture fixture = LoadFixture(binary);
    std::set<uint64_t> boundaries = {0};
    for (const FatbinEntry& entry : fixture.entries) boundaries.insert(entry.fatbin_offset);
    for (uint64_t size = 0; size < fixture.fatbins.size(); ++size) {
      absl::StatusOr<std::vector<FatbinEntry>> result =
          ReadFatbin(std::span(fixture.fatbins).first(size));
      INFO(binary << " truncated to " << size);
      if (boundaries.count(size) != 0) {
        CHECK(result.ok());
      } else {
        REQUIRE(!result.ok());
        CHECK(result.status().message().find("offset 0x") != std::string::npos);
      }
    }
  }
}

TEST_CASE("lying size fields are errors", "[fatbin][corrupt]") {
  const Fixture fixture = LoadFixture("compress_all");
  const FatbinEntry& last = fixture.entries.back();
  const uint64_t at = last.entry_offset;
  auto read_with = [&](uint64_t offset, int width, uint64_t value) {
    std::vector<uint8_t> bytes = fixture.fatbins;
    Store(bytes, offset, width, value);
    return ReadFatbin(bytes).status();
  };
  auto expect_error = [&](uint64_t offset, int width, uint64_t value, const char* words) {
    const absl::Status status = read_with(offset, width, value);
    INFO("field at 0x" << std::hex << offset << " = 0x" << value << ": " << status.ToString());
    REQUIRE(!status.ok());
    CHECK(status.message().find(words) != std::string::npos);
  };
  const uint64_t payload_size = Load(fixture.fatbins, at + 8, 8);
  const uint64_t compressed_size = Load(fixture.fatbins, at + 16, 4);
  const uint64_t decompressed_size = Load(fixture.fatbins, at + 56, 8);

  // Entry header size: below the fixed part, past the end, or wrapping 32 bits.
  expect_error(at + 4, 4, 0, "smaller than");
  expect_error(at + 4, 4, 63, "smaller than");
  expect_error(at + 4, 4, 0xffffffff, "truncated");
  // Payload size: into the bytes after the last entry, and absurdly large.
  expect_error(at + 8, 8, payload_size + 8, "runs past");
  expect_error(at + 8, 8, std::numeric_limits<uint64_t>::max(), "runs past");
  // Compressed size: zero, larger than the stored payload.
  expect_error(at + 16, 4, 0, "compressed size");
  expect_error(at + 16, 4, payload_size + 1, "compressed size");
  expect_error(at + 16, 4, compressed_size - 1, "zstd");
  // Decompressed size: off by one either way, past the cap.
  expect_error(at + 56, 8, decompressed_size + 1, "claims");
  expect_error(at + 56, 8, decompressed_size - 1, "claims");
  expect_error(at + 56, 8, uint64_t{1} << 40, "exceeds the limit");
  // Both compression flags at once.
  expect_error(at + 40, 8, Load(fixture.fatbins, at + 40, 8) | 0x2000, "both");
  // The fatbin's own header: body past the end, header size below 16, unknown version.
  const uint64_t fatbin = last.fatbin_offset;
  expect_error(fatbin + 8, 8, Load(fixture.fatbins, fatbin + 8, 8) + 1, "runs past");
  expect_error(fatbin + 6, 2, 8, "header size");
  expect_error(fatbin + 4, 2, 2, "version");
  // An entry whose payload swallows part of the next entry's header leaves a torn entry behind.
  const FatbinEntry& first = fixture.entries.front();
  std::vector<uint8_t> overlapping = fixture.fatbins;
  Store(overlapping, first.entry_offset + 8, 8, Load(overlapping, first.entry_offset + 8, 8) + 40);
  CHECK(!ReadFatbin(overlapping).ok());
}

TEST_CASE("LZ4 entries with lying sizes are errors", "[fatbin][corrupt]") {
  const Fixture fixture = LoadFixture("lz4");
  const uint64_t at = fixture.entries.back().entry_offset;
  std::vector<uint8_t> bytes = fixture.fatbins;
  const uint64_t decompressed_size = Load(bytes, at + 56, 8);
  for (uint64_t claim : {decompressed_size - 1, decompressed_size + 1, decompressed_size * 1000}) {
    Store(bytes, at + 56, 8, claim);
    const absl::Status status = ReadFatbin(bytes).status();
    INFO(status.ToString());
    CHECK(!status.ok());
  }
}

// Flips a few random bytes of `bytes[begin, end)` `rounds` times and hands each copy to `read`;
// returns how many copies were rejected. Seeded, so a failure reproduces.
template <typename Read>
int FlipBytes(const std::vector<uint8_t>& bytes, uint64_t begin, uint64_t end, int rounds,
              Read read) {
  std::mt19937_64 random(20240611);
  std::uniform_int_distribution<uint64_t> position(begin, end - 1);
  std::uniform_int_distribution<int> flips(1, 4);
  std::uniform_int_distribution<int> mask(1, 255);
  int rejected = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<uint8_t> copy = bytes;
    for (int i = flips(random); i > 0; --i) copy[position(random)] ^= mask(random);
    if (!read(copy)) ++rejected;
  }
  return rejected;
}

TEST_CASE("random byte flips never crash", "[fatbin][corrupt]") {
  for (const char* binary : {"compress_all", "lz4", "no_compress"}) {
    const Fixture fixture = LoadFixture(binary);
    // Bias the flips towards headers, where a flip changes the structure rather than the text.
    for (const FatbinEntry& entry : fixture.entries) {
      const int rejected =
          FlipBytes(fixture.fatbins, entry.entry_offset, entry.entry_offset + 64, 300,
                    [](const std::vector<uint8_t>& copy) { return ReadFatbin(copy).ok(); });
      CHECK(rejected > 0);
    }
    FlipBytes(fixture.fatbins, 0, fixture.fatbins.size(), 1000,
              [](const std::vector<uint8_t>& copy) { return ReadFatbin(copy).ok(); });
  }
}

TEST_CASE("corrupted host ELF files never crash", "[fatbin][corrupt]") {
  const std::vector<uint8_t> elf = LoadTestBinary("rdc");
  for (uint64_t size = 0; size < elf.size(); size += 97) {
    std::vector<uint8_t> truncated(elf.begin(), elf.begin() + size);
    CHECK(!ReadFatbinsFromElf(truncated).ok());
  }
  // The ELF header and the section header table at the end of the file.
  FlipBytes(elf, 0, 64, 500,
            [](const std::vector<uint8_t>& copy) { return ReadFatbinsFromElf(copy).ok(); });
  FlipBytes(elf, elf.size() - 64 * 20, elf.size(), 2000,
            [](const std::vector<uint8_t>& copy) { return ReadFatbinsFromElf(copy).ok(); });
}

TEST_CASE("corrupted cubins never crash the nv.info reader", "[fatbin][corrupt]") {
  const std::vector<FatbinEntry> entries = *ReadFatbinFile(LoadTestBinary("no_compress"));
  for (const FatbinEntry& entry : testing::OfKind(entries, FatbinEntryKind::kCubin)) {
    const std::vector<uint8_t> cubin(entry.payload.begin(), entry.payload.end());
    for (uint64_t size = 0; size < cubin.size(); size += 7) {
      std::vector<uint8_t> truncated(cubin.begin(), cubin.begin() + size);
      (void)ReadCubinKernelInfo(truncated);
    }
    FlipBytes(cubin, 0, cubin.size(), 2000,
              [](const std::vector<uint8_t>& copy) { return ReadCubinKernelInfo(copy).ok(); });
  }
}

}  // namespace
}  // namespace tally::ptx
