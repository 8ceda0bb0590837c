// A minimal ELF64 reader (System V gABI, "Sections" and "Dynamic Section"): section headers,
// DT_NEEDED strings of SHT_DYNAMIC, names of defined symbols in SHT_SYMTAB/SHT_DYNSYM. Every
// offset is bounds-checked: the binary is whatever the user passed.
#include "tools/tally_run/cudart_linkage.h"

#include <elf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace tally::tools {
namespace {

class ElfImage {
 public:
  explicit ElfImage(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  absl::StatusOr<T> Read(uint64_t offset) const {
    if (offset > bytes_.size() || sizeof(T) > bytes_.size() - offset) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ELF structure at offset %d lies outside the file", offset));
    }
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }

  // The NUL-terminated string at `offset` of the string table section `strtab`.
  std::string_view String(const Elf64_Shdr& strtab, uint64_t offset) const {
    if (strtab.sh_offset > bytes_.size() || offset >= strtab.sh_size ||
        strtab.sh_size > bytes_.size() - strtab.sh_offset) {
      return {};
    }
    const char* begin = reinterpret_cast<const char*>(bytes_.data() + strtab.sh_offset + offset);
    return {begin, strnlen(begin, strtab.sh_size - offset)};
  }

 private:
  std::span<const uint8_t> bytes_;
};

bool IsRuntimeSymbol(std::string_view name) {
  return name == "cudaMalloc" || name == "cudaLaunchKernel" || name == "__cudaRegisterFatBinary";
}

}  // namespace

absl::StatusOr<CudartLinkage> DetectCudartLinkage(std::span<const uint8_t> bytes) {
  if (bytes.size() < SELFMAG || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return CudartLinkage::kNotElf;
  }
  const ElfImage elf(bytes);
  TALLY_ASSIGN_OR_RETURN(const Elf64_Ehdr header, elf.Read<Elf64_Ehdr>(0));
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
    return absl::InvalidArgumentError("not a 64-bit ELF file");
  }
  std::vector<Elf64_Shdr> sections;
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    TALLY_ASSIGN_OR_RETURN(Elf64_Shdr section,
                           elf.Read<Elf64_Shdr>(header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr)));
    sections.push_back(section);
  }
  const auto linked_strtab = [&](const Elf64_Shdr& section) -> std::optional<Elf64_Shdr> {
    if (section.sh_link >= sections.size()) return std::nullopt;
    return sections[section.sh_link];
  };
  bool defines_runtime = false;
  bool has_device_code = false;
  std::optional<Elf64_Shdr> names = header.e_shstrndx < sections.size()
                                        ? std::optional(sections[header.e_shstrndx])
                                        : std::nullopt;
  for (const Elf64_Shdr& section : sections) {
    if (names && elf.String(*names, section.sh_name) == ".nv_fatbin") has_device_code = true;
    const std::optional<Elf64_Shdr> strtab = linked_strtab(section);
    if (!strtab) continue;
    if (section.sh_type == SHT_DYNAMIC) {
      for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= section.sh_size; off += sizeof(Elf64_Dyn)) {
        TALLY_ASSIGN_OR_RETURN(const Elf64_Dyn entry, elf.Read<Elf64_Dyn>(section.sh_offset + off));
        if (entry.d_tag == DT_NULL) break;
        if (entry.d_tag == DT_NEEDED &&
            elf.String(*strtab, entry.d_un.d_val).starts_with("libcudart.so")) {
          return CudartLinkage::kShared;
        }
      }
    } else if (section.sh_type == SHT_SYMTAB || section.sh_type == SHT_DYNSYM) {
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= section.sh_size; off += sizeof(Elf64_Sym)) {
        TALLY_ASSIGN_OR_RETURN(const Elf64_Sym symbol,
                               elf.Read<Elf64_Sym>(section.sh_offset + off));
        if (symbol.st_shndx != SHN_UNDEF && IsRuntimeSymbol(elf.String(*strtab, symbol.st_name))) {
          defines_runtime = true;
        }
      }
    }
  }
  // Device code without a libcudart import can only be registered by a runtime linked in
  // (also when the binary is stripped of the symbols that would show it).
  return defines_runtime || has_device_code ? CudartLinkage::kStatic : CudartLinkage::kNone;
}

absl::StatusOr<std::string> FindExecutable(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate =
        absl::StrFormat("%s/%s", dir.empty() ? absl::string_view(".") : dir, program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrFormat("%s: command not found", program));
}

}  // namespace tally::tools
