// Fatbin reader on real nvcc 13 binaries: each build mode's entries, kinds, archs and payloads.
#include "ptx_transform/fatbin.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "tests/fatbin/test_binaries.h"

namespace tally::ptx {
namespace {

using testing::FatbinSection;
using testing::LoadTestBinary;
using testing::OfKind;

const char* const kKernelNames[] = {"_Z5SaxpyPfid6Record", "_Z6AddOnePi", "_Z4FillIsEvPT_S0_jc"};

std::vector<FatbinEntry> ReadBinary(const std::string& name) {
  absl::StatusOr<std::vector<FatbinEntry>> entries = ReadFatbinFile(LoadTestBinary(name));
  INFO(name << ": " << entries.status().ToString());
  REQUIRE(entries.ok());
  return *std::move(entries);
}

bool HasAllKernels(const std::string& payload) {
  return std::all_of(std::begin(kKernelNames), std::end(kKernelNames),
                     [&](const char* name) { return payload.find(name) != std::string::npos; });
}

// The one PTX entry of our kernels; nvcc adds a device-link fatbin without PTX besides it.
FatbinEntry OnlyPtx(const std::vector<FatbinEntry>& entries) {
  const std::vector<FatbinEntry> ptx = OfKind(entries, FatbinEntryKind::kPtx);
  REQUIRE(ptx.size() == 1);
  return ptx[0];
}

// The cubin for `arch` that holds our kernels (the device-link fatbin's cubin holds none).
FatbinEntry KernelCubin(const std::vector<FatbinEntry>& entries, uint32_t arch) {
  for (const FatbinEntry& entry : OfKind(entries, FatbinEntryKind::kCubin)) {
    if (entry.arch == arch && HasAllKernels(entry.payload)) return entry;
  }
  FAIL("no cubin for sm_" << arch << " with the test kernels");
  return {};
}

void CheckPtx(const FatbinEntry& ptx, uint32_t arch) {
  const std::string& text = ptx.payload;
  CHECK(text.compare(text.find_first_not_of(" \t\r\n"), 8, ".version") == 0);
  CHECK(text.find(".target sm_" + std::to_string(arch)) != std::string::npos);
  CHECK(text.find('\0') == std::string::npos);
  CHECK(HasAllKernels(text));
  CHECK(ptx.major_version >= 8);
}

void CheckCubins(const std::vector<FatbinEntry>& entries) {
  for (const FatbinEntry& cubin : OfKind(entries, FatbinEntryKind::kCubin)) {
    REQUIRE(cubin.payload.size() > 64);
    CHECK(cubin.payload.compare(0, 4,
                                "\x7f"
                                "ELF") == 0);
  }
}

std::set<uint32_t> ArchesOf(const std::vector<FatbinEntry>& entries, FatbinEntryKind kind) {
  std::set<uint32_t> arches;
  for (const FatbinEntry& entry : OfKind(entries, kind)) arches.insert(entry.arch);
  return arches;
}

TEST_CASE("default build: sm_75 cubin and zstd-compressed compute_75 PTX", "[fatbin]") {
  const std::vector<FatbinEntry> entries = ReadBinary("default");
  const FatbinEntry ptx = OnlyPtx(entries);
  CHECK(ptx.arch == 75);
  CHECK(ptx.compression == FatbinCompression::kZstd);
  CHECK(ptx.stored_size < ptx.payload.size());
  CHECK(ptx.section == ".nv_fatbin");
  CheckPtx(ptx, 75);
  CheckCubins(entries);
  CHECK(KernelCubin(entries, 75).compression == FatbinCompression::kNone);
  CHECK(ArchesOf(entries, FatbinEntryKind::kCubin) == std::set<uint32_t>{75});
}

TEST_CASE("compressed and uncompressed builds hold the same PTX and cubins", "[fatbin]") {
  const std::vector<FatbinEntry> plain = ReadBinary("no_compress");
  for (const FatbinEntry& entry : plain) CHECK(entry.compression == FatbinCompression::kNone);
  const FatbinEntry plain_ptx = OnlyPtx(plain);
  CheckPtx(plain_ptx, 75);
  const FatbinEntry plain_cubin = KernelCubin(plain, 75);

  const std::vector<FatbinEntry> zstd_all = ReadBinary("compress_all");
  const std::vector<FatbinEntry> lz4_all = ReadBinary("lz4");
  CheckCubins(zstd_all);
  CheckCubins(lz4_all);
  for (const FatbinEntry& entry : zstd_all) CHECK(entry.compression == FatbinCompression::kZstd);
  for (const FatbinEntry& entry : lz4_all) CHECK(entry.compression == FatbinCompression::kLz4);

  CHECK(OnlyPtx(ReadBinary("default")).payload == plain_ptx.payload);
  CHECK(OnlyPtx(zstd_all).payload == plain_ptx.payload);
  CHECK(OnlyPtx(lz4_all).payload == plain_ptx.payload);
  // Stored uncompressed, a cubin keeps the container's padding to 8 bytes; decompressed it is
  // exactly the ELF image.
  for (const FatbinEntry& cubin : {KernelCubin(zstd_all, 75), KernelCubin(lz4_all, 75)}) {
    CHECK(cubin.stored_size < cubin.payload.size());
    REQUIRE(cubin.payload.size() <= plain_cubin.payload.size());
    CHECK(plain_cubin.payload.size() - cubin.payload.size() < 8);
    CHECK(plain_cubin.payload.compare(0, cubin.payload.size(), cubin.payload) == 0);
  }
}

TEST_CASE("several -gencode: sm_75 and sm_90 cubins, compute_80 PTX", "[fatbin]") {
  const std::vector<FatbinEntry> entries = ReadBinary("multi_arch");
  CheckCubins(entries);
  CHECK(ArchesOf(entries, FatbinEntryKind::kCubin) == std::set<uint32_t>{75, 90});
  const FatbinEntry ptx = OnlyPtx(entries);
  CHECK(ptx.arch == 80);
  CheckPtx(ptx, 80);
  KernelCubin(entries, 75);
  KernelCubin(entries, 90);

  // Only the entries of one fatbin go to SelectPtxForArch.
  std::vector<FatbinEntry> module;
  for (const FatbinEntry& entry : entries) {
    if (entry.fatbin_index == ptx.fatbin_index) module.push_back(entry);
  }
  CHECK(SelectPtxForArch(module, 75) == nullptr);
  for (uint32_t device : {80u, 86u, 90u, 120u}) {
    const FatbinEntry* best = SelectPtxForArch(module, device);
    REQUIRE(best != nullptr);
    CHECK(best->arch == 80);
  }
}

TEST_CASE("shared library", "[fatbin]") {
  const std::vector<FatbinEntry> entries = ReadBinary("libkernels.so");
  CheckCubins(entries);
  const FatbinEntry ptx = OnlyPtx(entries);
  CHECK(ptx.payload.find(".entry _Z14ScaleInLibraryPffj") != std::string::npos);
}

TEST_CASE("-rdc=true: relocatable fatbin besides the linked one", "[fatbin]") {
  const std::vector<FatbinEntry> entries = ReadBinary("rdc");
  CheckCubins(entries);
  std::set<std::string> sections;
  for (const FatbinEntry& entry : entries) sections.insert(entry.section);
  CHECK(sections == std::set<std::string>{".nv_fatbin", "__nv_relfatbin"});
  const FatbinEntry ptx = OnlyPtx(entries);
  CHECK(ptx.section == "__nv_relfatbin");
  CHECK(ptx.ptxas_options == "--compile-only");
  CheckPtx(ptx, 75);
}

TEST_CASE("raw fatbins read the same as through the ELF", "[fatbin]") {
  const std::vector<uint8_t> elf = LoadTestBinary("multi_arch");
  const std::vector<FatbinEntry> from_elf = ReadBinary("multi_arch");
  absl::StatusOr<std::vector<FatbinEntry>> raw = ReadFatbin(FatbinSection(elf));
  REQUIRE(raw.ok());
  REQUIRE(raw->size() == from_elf.size());
  const uint64_t section_offset = from_elf[0].fatbin_offset;
  for (size_t i = 0; i < raw->size(); ++i) {
    CHECK((*raw)[i].payload == from_elf[i].payload);
    CHECK((*raw)[i].fatbin_index == from_elf[i].fatbin_index);
    CHECK((*raw)[i].entry_offset + section_offset == from_elf[i].entry_offset);
    CHECK((*raw)[i].section.empty());
  }

  // Linkers may pad between fatbins with zeros; anything else between them is corruption.
  const std::vector<uint8_t> section = FatbinSection(elf);
  const uint64_t second = raw->back().fatbin_offset;
  std::vector<uint8_t> padded(section.begin(), section.begin() + second);
  padded.insert(padded.end(), 24, 0);
  padded.insert(padded.end(), section.begin() + second, section.end());
  absl::StatusOr<std::vector<FatbinEntry>> read_padded = ReadFatbin(padded);
  REQUIRE(read_padded.ok());
  CHECK(read_padded->size() == raw->size());
  CHECK(read_padded->back().fatbin_offset == second + 24);
  padded[second + 3] = 0x5a;
  CHECK(ReadFatbin(padded).status().message().find("bad magic") != std::string::npos);
}

// Mirrors __fatBinC_Wrapper_t as nvcc emits it into .nvFatBinSegment.
struct TestWrapper {
  int32_t magic;
  int32_t version;
  const unsigned long long* data;
  const void* filename_or_fatbins;
};

TEST_CASE("in-process __fatBinC_Wrapper_t", "[fatbin]") {
  const std::vector<uint8_t> section = FatbinSection(LoadTestBinary("default"));
  // The second fatbin holds our kernels; copy it alone to 8-aligned memory as a process has it.
  const std::vector<FatbinEntry> entries = *ReadFatbin(section);
  const FatbinEntry ptx = OnlyPtx(entries);
  const std::span<const uint8_t> fatbin = std::span(section).subspan(ptx.fatbin_offset);
  std::vector<unsigned long long> memory(fatbin.size() / 8 + 1);
  std::memcpy(memory.data(), fatbin.data(), fatbin.size());
  TestWrapper wrapper{0x466243b1, 1, memory.data(), nullptr};

  absl::StatusOr<std::span<const uint8_t>> image = FatbinWrapperImage(&wrapper);
  REQUIRE(image.ok());
  CHECK(image->size() == section.size() - ptx.fatbin_offset);
  absl::StatusOr<std::vector<FatbinEntry>> read = ReadFatbinWrapper(&wrapper);
  REQUIRE(read.ok());
  CHECK(OnlyPtx(*read).payload == ptx.payload);

  wrapper.magic = 0x12345678;
  CHECK(!ReadFatbinWrapper(&wrapper).ok());
  wrapper.magic = 0x466243b1;
  wrapper.version = 7;
  CHECK(!ReadFatbinWrapper(&wrapper).ok());
  wrapper.version = 2;
  wrapper.data = nullptr;
  CHECK(!ReadFatbinWrapper(&wrapper).ok());
  CHECK(!ReadFatbinWrapper(nullptr).ok());
  // A fatbin file that starts with a wrapper cannot be followed: its pointer is meaningless.
  std::vector<uint8_t> wrapper_bytes(sizeof(wrapper));
  std::memcpy(wrapper_bytes.data(), &wrapper, sizeof(wrapper));
  CHECK(ReadFatbin(wrapper_bytes).status().message().find("__fatBinC_Wrapper_t") !=
        std::string::npos);
}

TEST_CASE("inputs without device code", "[fatbin]") {
  std::ifstream self("/proc/self/exe", std::ios::binary);
  const std::vector<uint8_t> host_only(std::istreambuf_iterator<char>(self), {});
  absl::StatusOr<std::vector<FatbinEntry>> entries = ReadFatbinFile(host_only);
  REQUIRE(entries.ok());
  CHECK(entries->empty());
  CHECK(ReadFatbin({}).ok());
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  CHECK(ReadFatbinFile(text).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("SelectPtxForArch skips arch- and family-specific PTX elsewhere", "[fatbin]") {
  auto ptx = [](uint32_t arch, bool arch_specific, bool family_specific) {
    FatbinEntry entry;
    entry.kind = FatbinEntryKind::kPtx;
    entry.arch = arch;
    entry.arch_specific = arch_specific;
    entry.family_specific = family_specific;
    return entry;
  };
  FatbinEntry cubin = ptx(90, false, false);
  cubin.kind = FatbinEntryKind::kCubin;
  const std::vector<FatbinEntry> entries = {ptx(75, false, false), cubin, ptx(90, true, false),
                                            ptx(100, false, true)};
  CHECK(SelectPtxForArch(entries, 70) == nullptr);
  CHECK(SelectPtxForArch(entries, 89) == &entries[0]);
  CHECK(SelectPtxForArch(entries, 90) == &entries[2]);
  CHECK(SelectPtxForArch(entries, 100) == &entries[3]);
  CHECK(SelectPtxForArch(entries, 103) == &entries[3]);
  CHECK(SelectPtxForArch(entries, 120) == &entries[0]);
}

}  // namespace
}  // namespace tally::ptx
