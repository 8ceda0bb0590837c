// Kernel signatures: for every `.entry`, each parameter's size, alignment and offset in the
// parameter buffer, i.e. the layout of cuLaunchKernel's kernelParams.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ptx_transform/ir.h"

namespace tally::ptx {

struct ParamLayout {
  std::string name;
  uint32_t size = 0;
  uint32_t alignment = 1;
  uint32_t offset = 0;
  friend bool operator==(const ParamLayout&, const ParamLayout&) = default;
};

struct KernelSignature {
  std::string name;       // as in the PTX (mangled)
  std::string demangled;  // C++ demangled name, or the name itself when not mangled
  std::vector<ParamLayout> params;
  uint32_t param_buffer_size = 0;  // offset + size of the last parameter (0 without any)
};

// Size in bytes of a PTX scalar type (`u32` -> 4, `f16x2` -> 4); 0 for unknown types.
uint32_t ScalarTypeSize(std::string_view type);

// Fails for parameters whose size is unknown (unknown type, unsized array) or too large.
absl::StatusOr<KernelSignature> ComputeSignature(const Function& entry);
// Signatures of every `.entry` with a body or declaration, in module order.
absl::StatusOr<std::vector<KernelSignature>> ComputeSignatures(const Module& module);

std::string Demangle(const std::string& name);

}  // namespace tally::ptx
