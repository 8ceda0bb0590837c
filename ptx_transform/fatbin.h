// Reading CUDA fatbins: the containers nvcc embeds in host binaries (`.nv_fatbin`) and that
// applications register with `__cudaRegisterFatBinary`, holding PTX and cubin entries.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::ptx {

enum class FatbinEntryKind : uint8_t { kPtx, kCubin, kOther };
enum class FatbinCompression : uint8_t { kNone, kLz4, kZstd };

std::string_view ToString(FatbinEntryKind kind);
std::string_view ToString(FatbinCompression compression);

// One entry of a fatbin with its payload fully decompressed.
struct FatbinEntry {
  // Where the entry came from. Offsets are absolute in the bytes handed to the reader (the whole
  // file for ReadFatbinsFromElf), so a listing or an error can point at them.
  std::string section;         // ".nv_fatbin" or "__nv_relfatbin"; empty for a raw fatbin
  uint32_t fatbin_index = 0;   // n-th fatbin in the input, counting from 0
  uint64_t fatbin_offset = 0;  // of that fatbin's header
  uint64_t entry_offset = 0;   // of this entry's header

  FatbinEntryKind kind = FatbinEntryKind::kOther;
  uint16_t raw_kind = 0;         // the stored kind: 1 PTX, 2 ELF cubin
  uint32_t arch = 0;             // SM number: 75 for sm_75 and compute_75
  bool arch_specific = false;    // sm_90a / compute_90a: runs on exactly `arch`
  bool family_specific = false;  // sm_100f / compute_100f: runs on `arch`'s family only
  uint16_t major_version = 0;    // PTX ISA version of PTX entries (9.0), ELF version of cubins
  uint16_t minor_version = 0;
  uint64_t flags = 0;  // as stored; compression and the two bits above are decoded
  FatbinCompression compression = FatbinCompression::kNone;
  uint64_t stored_size = 0;   // payload bytes in the container, compressed when compressed
  std::string ptxas_options;  // recorded with some PTX entries (`--compile-only` for -rdc)
  // PTX text without its NUL terminator, or the cubin's ELF image (possibly followed by the
  // container's alignment padding when it was stored uncompressed).
  std::string payload;
};

// Every entry of one or more fatbins stored back to back (a `.nv_fatbin` section's contents, or
// a file from `nvcc -fatbin`). Zero padding between fatbins is skipped.
absl::StatusOr<std::vector<FatbinEntry>> ReadFatbin(std::span<const uint8_t> bytes);

// Every entry of every fatbin in the `.nv_fatbin` and `__nv_relfatbin` (-rdc) sections of a
// host ELF64 executable, shared library or object file. A binary without device code gives an
// empty list.
absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinsFromElf(std::span<const uint8_t> elf);

// A host ELF or a raw fatbin, told apart by their magic numbers.
absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinFile(std::span<const uint8_t> bytes);

// The bytes of the fatbin that a `__fatBinC_Wrapper_t` (what `__cudaRegisterFatBinary`
// receives) points to, sized by the fatbin's own header. Dereferences `wrapper` and its data
// pointer: only meaningful inside the process that owns them.
absl::StatusOr<std::span<const uint8_t>> FatbinWrapperImage(const void* wrapper);

// ReadFatbin on FatbinWrapperImage(wrapper).
absl::StatusOr<std::vector<FatbinEntry>> ReadFatbinWrapper(const void* wrapper);

// The PTX entry that the driver would JIT for a device of `device_arch` (86 for sm_86): the one
// with the highest arch not above the device's, skipping arch- and family-specific PTX that
// cannot run there; the first of equals wins. Pass one fatbin's entries. Null when none fits.
const FatbinEntry* SelectPtxForArch(std::span<const FatbinEntry> entries, uint32_t device_arch);

}  // namespace tally::ptx
