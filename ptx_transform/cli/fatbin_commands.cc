// `tally-ptx list` and `tally-ptx extract`: what is inside a CUDA binary's fatbins.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ptx_transform/cli/commands.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/parser.h"

namespace tally::ptx {
namespace {

// Reads and decodes `path`; prints the problem and returns false when that fails.
bool ReadEntries(const std::string& path, std::vector<FatbinEntry>& entries) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "tally-ptx: cannot open %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  auto result = ReadFatbinFile(bytes);
  if (!result.ok()) {
    std::fprintf(stderr, "tally-ptx: %s: %s\n", path.c_str(),
                 std::string(result.status().message()).c_str());
    return false;
  }
  entries = *std::move(result);
  return true;
}

std::string ArchName(const FatbinEntry& e) {
  return fmt::format("{}_{}{}", e.kind == FatbinEntryKind::kPtx ? "compute" : "sm", e.arch,
                     e.arch_specific ? "a" : (e.family_specific ? "f" : ""));
}

// Prints each kernel of a PTX entry with its parameter layout; false if the PTX is invalid.
bool ListKernels(const FatbinEntry& entry, const std::string& label) {
  DiagnosticSink sink;
  Module module = ParseModule(entry.payload, sink);
  if (sink.HasErrors()) {
    std::printf("    PTX does not parse (%zu errors):\n", sink.error_count());
    std::fputs(sink.Format(label).c_str(), stdout);
    return false;
  }
  auto signatures = ComputeSignatures(module);
  if (!signatures.ok()) {
    std::printf("    %s\n", std::string(signatures.status().message()).c_str());
    return false;
  }
  for (const auto& sig : *signatures) {
    std::printf("    kernel %s\n", sig.name.c_str());
    if (sig.demangled != sig.name) std::printf("      = %s\n", sig.demangled.c_str());
    std::printf("      %zu params, %u bytes\n", sig.params.size(), sig.param_buffer_size);
    for (size_t i = 0; i < sig.params.size(); ++i) {
      const ParamLayout& p = sig.params[i];
      std::printf("      [%zu] offset %4u  size %4u  align %2u  %s\n", i, p.offset, p.size,
                  p.alignment, p.name.c_str());
    }
  }
  return true;
}

}  // namespace

int ListCommand(const std::string& binary) {
  std::vector<FatbinEntry> entries;
  if (!ReadEntries(binary, entries)) return kExitInvalidInput;
  if (entries.empty()) {
    std::printf("%s: no device code (no fatbins)\n", binary.c_str());
    return kExitOk;
  }
  bool all_valid = true;
  int64_t current_fatbin = -1;
  for (size_t i = 0; i < entries.size(); ++i) {
    const FatbinEntry& e = entries[i];
    if (static_cast<int64_t>(e.fatbin_index) != current_fatbin) {
      current_fatbin = e.fatbin_index;
      std::printf("fatbin %u at offset 0x%llx%s%s\n", e.fatbin_index,
                  static_cast<unsigned long long>(e.fatbin_offset), e.section.empty() ? "" : " in ",
                  e.section.c_str());
    }
    std::printf("  entry %zu: %-5s %-12s %-5s %8llu bytes stored, %8zu bytes", i,
                std::string(ToString(e.kind)).c_str(), ArchName(e).c_str(),
                std::string(ToString(e.compression)).c_str(),
                static_cast<unsigned long long>(e.stored_size), e.payload.size());
    if (e.kind == FatbinEntryKind::kPtx) {
      std::printf(", PTX ISA %u.%u\n", e.major_version, e.minor_version);
      all_valid &= ListKernels(e, fmt::format("{}:entry{}", binary, i));
    } else {
      std::printf("\n");
    }
  }
  return all_valid ? kExitOk : kExitInvalidInput;
}

int ExtractCommand(const std::string& binary, const std::string& output_dir) {
  std::vector<FatbinEntry> entries;
  if (!ReadEntries(binary, entries)) return kExitInvalidInput;
  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  if (ec) {
    std::fprintf(stderr, "tally-ptx: cannot create %s: %s\n", output_dir.c_str(),
                 ec.message().c_str());
    return kExitInvalidInput;
  }
  std::string stem = std::filesystem::path(binary).filename().string();
  size_t written = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const FatbinEntry& e = entries[i];
    if (e.kind != FatbinEntryKind::kPtx) continue;
    std::string path = fmt::format("{}/{}.fatbin{}.entry{}.{}.ptx", output_dir, stem,
                                   e.fatbin_index, i, ArchName(e));
    std::ofstream out(path, std::ios::binary);
    out << e.payload;
    if (!out) {
      std::fprintf(stderr, "tally-ptx: cannot write %s\n", path.c_str());
      return kExitInvalidInput;
    }
    std::printf("%s\n", path.c_str());
    ++written;
  }
  if (written == 0) std::fprintf(stderr, "tally-ptx: %s has no PTX entries\n", binary.c_str());
  return kExitOk;
}

}  // namespace tally::ptx
