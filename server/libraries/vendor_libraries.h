// The vendor libraries the server runs library calls in (ARCHITECTURE.md, "Libraries"), and the
// rule that says whose calls (--library-kernels): the others' run in Tally's own kernels, which
// the scheduler transforms and preempts like any kernel.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/client_priority.h"
#include "ipc/vendor_calls.h"
#include "server/libraries/vendor_blas.h"

namespace tally::server {

enum class LibraryKernelRule {
  kOwn,         // nobody's calls run in the vendor library
  kVendor,      // everybody's
  kByPriority,  // those of clients that connect at level high or above
};

// As --library-kernels takes it.
std::string_view LibraryKernelRuleName(LibraryKernelRule rule);
absl::StatusOr<LibraryKernelRule> ParseLibraryKernelRule(std::string_view value);

struct VendorLibraries {
  std::unique_ptr<VendorBlas> blas;  // cuBLAS and cuBLASLt; null: not loaded
  LibraryKernelRule rule = LibraryKernelRule::kByPriority;

  // The libraries whose calls run in the vendor library for a client that connects with
  // `priority`; decided once, at the connection.
  ipc::LibrarySet For(ClientPriority priority) const;
};

// What --vendor-libraries and --library-kernels ask for: `folder` "none" loads nothing, empty
// the dynamic loader's choice (on NVIDIA's driver only: on the emulated GPU NVIDIA's libraries
// cannot run). A library that cannot be loaded is logged, and its calls run in Tally's kernels.
VendorLibraries LoadVendorLibraries(const std::string& folder, LibraryKernelRule rule,
                                    bool emulated);

}  // namespace tally::server
