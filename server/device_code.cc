// Choosing and linking the PTX of an image. Linking happens here, on the IR, rather than with
// the driver's cuLink*: the emulated GPU needs no linker of its own, and the kernel
// transformations see the whole program (a kernel's callees may live in another unit).
#include "server/device_code.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ptx_transform/link.h"
#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

absl::StatusOr<ptx::Module> ParsePtx(const ptx::FatbinEntry& entry) {
  auto module = ptx::ParseModuleOrError(entry.payload, "<fatbin ptx>");
  if (!module.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, module.status().message());
  return module;
}

absl::Status NoPtxFor(uint32_t device_arch, const std::string& where) {
  return ClientError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                     absl::StrFormat("%s has no PTX that sm_%d can run (Tally loads PTX: build "
                                     "with a compute_XX target, e.g. nvcc's default)",
                                     where, device_arch));
}

}  // namespace

absl::StatusOr<DeviceCode> SelectDeviceCode(std::span<const ptx::FatbinEntry> entries,
                                            uint32_t device_arch) {
  // Entries come fatbin by fatbin: split them into one span per fatbin.
  std::vector<std::span<const ptx::FatbinEntry>> fatbins;
  for (size_t begin = 0; begin < entries.size();) {
    size_t end = begin;
    while (end < entries.size() && entries[end].fatbin_index == entries[begin].fatbin_index) ++end;
    fatbins.push_back(entries.subspan(begin, end - begin));
    begin = end;
  }
  DeviceCode code;
  if (fatbins.size() <= 1) {
    const ptx::FatbinEntry* ptx = ptx::SelectPtxForArch(entries, device_arch);
    if (ptx == nullptr) return NoPtxFor(device_arch, "the fatbin");
    code.ptx = ptx->payload;
    code.arch = ptx->arch;
    return code;
  }
  std::vector<ptx::Module> units;
  for (std::span<const ptx::FatbinEntry> fatbin : fatbins) {
    const bool has_ptx = std::ranges::any_of(
        fatbin, [](const ptx::FatbinEntry& e) { return e.kind == ptx::FatbinEntryKind::kPtx; });
    if (!has_ptx) continue;
    const ptx::FatbinEntry* ptx = ptx::SelectPtxForArch(fatbin, device_arch);
    if (ptx == nullptr) {
      return NoPtxFor(device_arch,
                      absl::StrFormat("translation unit %d of the linked program", units.size()));
    }
    TALLY_ASSIGN_OR_RETURN(units.emplace_back(), ParsePtx(*ptx));
    if (code.arch == 0) code.arch = ptx->arch;
  }
  if (units.empty()) return NoPtxFor(device_arch, "no fatbin of the linked program");
  auto linked = ptx::LinkModules(std::move(units));
  if (!linked.ok()) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("cannot link the program's device code (-rdc=true): %s",
                                       linked.status().message()));
  }
  code.ptx = ptx::PrintModule(linked->module);
  code.module = std::move(linked->module);
  code.unresolved_functions = std::move(linked->unresolved_functions);
  return code;
}

}  // namespace tally::server
