// nv.info parameter records of real cubins against the hand-known layouts of tests/fatbin's
// kernels.
#include "ptx_transform/cubin_info.h"

#include <catch2/catch.hpp>
#include <map>

#include "tests/fatbin/test_binaries.h"

namespace tally::ptx {
namespace {

std::map<std::string, CubinKernelInfo> KernelsOf(const FatbinEntry& cubin) {
  absl::StatusOr<std::vector<CubinKernelInfo>> kernels = ReadCubinKernelInfo(
      {reinterpret_cast<const uint8_t*>(cubin.payload.data()), cubin.payload.size()});
  INFO(kernels.status().ToString());
  REQUIRE(kernels.ok());
  std::map<std::string, CubinKernelInfo> by_name;
  for (CubinKernelInfo& kernel : *kernels) by_name[kernel.name] = std::move(kernel);
  return by_name;
}

TEST_CASE("kernel parameter records of sm_75 and sm_90 cubins", "[fatbin][cubin_info]") {
  const std::vector<FatbinEntry> entries = *ReadFatbinFile(testing::LoadTestBinary("multi_arch"));
  // Parameters start at 0x160 of constant bank 0 on Turing/Ampere, at 0x210 on Hopper.
  const std::map<uint32_t, uint32_t> cbank_offset = {{75, 0x160}, {90, 0x210}};
  int cubins_with_kernels = 0;
  for (const FatbinEntry& cubin : testing::OfKind(entries, FatbinEntryKind::kCubin)) {
    const std::map<std::string, CubinKernelInfo> kernels = KernelsOf(cubin);
    if (kernels.empty()) continue;  // nvcc's device-link cubin
    ++cubins_with_kernels;
    INFO("sm_" << cubin.arch);
    REQUIRE(kernels.size() == 3);

    const CubinKernelInfo& saxpy = kernels.at("_Z5SaxpyPfid6Record");
    CHECK(saxpy.params == std::vector<CubinParam>{{0, 0, 8}, {1, 8, 4}, {2, 16, 8}, {3, 24, 24}});
    CHECK(saxpy.cbank_param_size == 48u);
    CHECK(saxpy.param_cbank_size == 48u);
    CHECK(saxpy.param_cbank_offset == cbank_offset.at(cubin.arch));

    const CubinKernelInfo& add_one = kernels.at("_Z6AddOnePi");
    CHECK(add_one.params == std::vector<CubinParam>{{0, 0, 8}});
    CHECK(add_one.cbank_param_size == 8u);

    const CubinKernelInfo& fill = kernels.at("_Z4FillIsEvPT_S0_jc");
    CHECK(fill.params == std::vector<CubinParam>{{0, 0, 8}, {1, 8, 2}, {2, 12, 4}, {3, 16, 1}});
  }
  CHECK(cubins_with_kernels == 2);
}

TEST_CASE("malformed nv.info records are errors", "[fatbin][cubin_info]") {
  const std::vector<FatbinEntry> entries = *ReadFatbinFile(testing::LoadTestBinary("no_compress"));
  std::string cubin;
  for (const FatbinEntry& entry : testing::OfKind(entries, FatbinEntryKind::kCubin)) {
    if (entry.payload.find("_Z6AddOnePi") != std::string::npos) cubin = entry.payload;
  }
  REQUIRE(!cubin.empty());
  const std::vector<uint8_t> elf(cubin.begin(), cubin.end());
  absl::StatusOr<std::vector<internal::ElfSection>> sections = internal::ReadElfSections(elf);
  REQUIRE(sections.ok());
  uint64_t info_offset = 0;
  for (const internal::ElfSection& section : *sections) {
    if (section.name == ".nv.info._Z6AddOnePi") info_offset = section.file_offset;
  }
  REQUIRE(info_offset != 0);

  std::vector<uint8_t> bad_format = elf;
  bad_format[info_offset] = 0x09;
  absl::StatusOr<std::vector<CubinKernelInfo>> result = ReadCubinKernelInfo(bad_format);
  REQUIRE(!result.ok());
  CHECK(result.status().message().find("offset 0x") != std::string::npos);

  // The first record is sized: claim more bytes than the section holds.
  std::vector<uint8_t> oversized = elf;
  REQUIRE(oversized[info_offset] == 4);
  oversized[info_offset + 2] = 0xff;
  oversized[info_offset + 3] = 0xff;
  CHECK(!ReadCubinKernelInfo(oversized).ok());
}

}  // namespace
}  // namespace tally::ptx
