// Parameter-buffer layout of kernels: each `.param` is placed at the next offset that is a
// multiple of its alignment (the explicit `.align`, else the natural alignment of its type),
// which is how the driver lays out cuLaunchKernel's kernelParams (PTX ISA "Kernel Function
// Parameters").
#include "ptx_transform/kernel_signature.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>

#include "common/status.h"

namespace tally::ptx {

uint32_t ScalarTypeSize(std::string_view type) {
  if (type.size() < 2) return 0;
  std::string_view bits = type.substr(1);
  if (type == "f16x2" || type == "bf16x2") return 4;
  if (type == "bf16") return 2;
  char kind = type[0];
  if (kind != 'b' && kind != 'u' && kind != 's' && kind != 'f') return 0;
  if (bits == "8") return kind == 'f' ? 0 : 1;
  if (bits == "16") return 2;
  if (bits == "32") return 4;
  if (bits == "64") return 8;
  if (bits == "128") return kind == 'b' ? 16 : 0;
  return 0;
}

absl::StatusOr<KernelSignature> ComputeSignature(const Function& entry) {
  KernelSignature sig;
  sig.name = entry.name;
  sig.demangled = Demangle(entry.name);
  uint64_t offset = 0;
  for (const VarDecl& p : entry.params) {
    uint64_t element = ScalarTypeSize(p.type);
    if (element == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "kernel {}: parameter {} has unsupported type .{}", entry.name, p.name, p.type));
    }
    element *= p.vector_width ? p.vector_width : 1;
    uint64_t size = element;
    for (const auto& dim : p.dims) {
      if (!dim) {
        return absl::InvalidArgumentError(
            fmt::format("kernel {}: parameter {} is an unsized array", entry.name, p.name));
      }
      size *= *dim;
      if (size > UINT32_MAX) break;
    }
    uint64_t alignment = p.align.value_or(element);
    // A kernel's parameters are limited to 32764 bytes (CUDA 12.1+); anything near 4 GiB is
    // certainly malformed.
    if (size > UINT32_MAX / 2 || alignment > 4096) {
      return absl::InvalidArgumentError(
          fmt::format("kernel {}: parameter {} is too large", entry.name, p.name));
    }
    offset = (offset + alignment - 1) / alignment * alignment;
    if (offset + size > UINT32_MAX / 2) {
      return absl::InvalidArgumentError(
          fmt::format("kernel {}: parameter buffer too large", entry.name));
    }
    sig.params.push_back({p.name, static_cast<uint32_t>(size), static_cast<uint32_t>(alignment),
                          static_cast<uint32_t>(offset)});
    offset += size;
  }
  sig.param_buffer_size = static_cast<uint32_t>(offset);
  return sig;
}

absl::StatusOr<std::vector<KernelSignature>> ComputeSignatures(const Module& module) {
  std::vector<KernelSignature> result;
  for (const auto& item : module.items) {
    const auto* f = std::get_if<Function>(&item.value);
    if (f == nullptr || !f->is_entry) continue;
    TALLY_ASSIGN_OR_RETURN(KernelSignature sig, ComputeSignature(*f));
    result.push_back(std::move(sig));
  }
  return result;
}

std::string Demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || demangled == nullptr) return name;
  return demangled.get();
}

}  // namespace tally::ptx
