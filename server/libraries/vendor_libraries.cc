#include "server/libraries/vendor_libraries.h"

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace tally::server {

std::string_view LibraryKernelRuleName(LibraryKernelRule rule) {
  switch (rule) {
    case LibraryKernelRule::kOwn:
      return "own";
    case LibraryKernelRule::kVendor:
      return "vendor";
    case LibraryKernelRule::kByPriority:
      return "by-priority";
  }
  return "unknown";
}

absl::StatusOr<LibraryKernelRule> ParseLibraryKernelRule(std::string_view value) {
  for (LibraryKernelRule rule :
       {LibraryKernelRule::kOwn, LibraryKernelRule::kVendor, LibraryKernelRule::kByPriority}) {
    if (value == LibraryKernelRuleName(rule)) return rule;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--library-kernels wants own, vendor or by-priority, not '%s'", value));
}

ipc::LibrarySet VendorLibraries::For(ClientPriority priority) const {
  if (blas == nullptr) return 0;
  const bool vendor = rule == LibraryKernelRule::kVendor ||
                      (rule == LibraryKernelRule::kByPriority && priority.is_set() &&
                       priority.level() >= ClientPriority::kHighLevel);
  return vendor ? ipc::LibraryBit(ipc::Library::kCublas) | ipc::LibraryBit(ipc::Library::kCublasLt)
                : 0;
}

VendorLibraries LoadVendorLibraries(const std::string& folder, LibraryKernelRule rule,
                                    bool emulated) {
  VendorLibraries libraries;
  libraries.rule = rule;
  if (folder == "none" || rule == LibraryKernelRule::kOwn) return libraries;
  if (folder.empty() && emulated) {
    TALLY_LOG_INFO(
        "library calls run in Tally's kernels: NVIDIA's libraries need a GPU "
        "(--vendor-libraries names a folder of stand-ins for the emulated GPU)");
    return libraries;
  }
  absl::StatusOr<std::unique_ptr<VendorBlas>> blas = VendorBlas::Load(folder);
  if (!blas.ok()) {
    TALLY_LOG_WARN(
        "cuBLAS and cuBLASLt calls run in Tally's kernels: the vendor library did not "
        "load: {}",
        std::string(blas.status().message()));
    return libraries;
  }
  libraries.blas = *std::move(blas);
  TALLY_LOG_INFO("cuBLAS GEMMs and cuBLASLt matmuls of {} clients run in {} (--library-kernels {})",
                 rule == LibraryKernelRule::kVendor ? "all" : "high-priority",
                 libraries.blas->path(), LibraryKernelRuleName(rule));
  return libraries;
}

}  // namespace tally::server
