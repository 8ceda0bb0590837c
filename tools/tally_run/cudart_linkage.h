// How an executable gets the CUDA runtime, read from its ELF: tally-run can only intercept a
// runtime linked as a shared library (nvcc -cudart shared), so it refuses static ones.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace tally::tools {

enum class CudartLinkage {
  kShared,  // DT_NEEDED libcudart.so.*: the shim stands in for it
  kStatic,  // runtime functions or device code inside the binary, no libcudart import
  kNone,    // no CUDA runtime (may still dlopen CUDA libraries: e.g. an interpreter)
  kNotElf,  // a script or another format: nothing to inspect
};

// The linkage of the ELF64 image `bytes`. InvalidArgument for a malformed ELF.
absl::StatusOr<CudartLinkage> DetectCudartLinkage(std::span<const uint8_t> bytes);

// The path execvp would run for `program` (searched in PATH unless it contains a '/').
absl::StatusOr<std::string> FindExecutable(const std::string& program);

}  // namespace tally::tools
