// Statuses and scalars shared by the BLAS stand-ins' entry points.
#include "libraries/blas/calls.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace tally::libraries {

cublasStatus_t FromLaunch(cudaError_t launched) {
  switch (launched) {
    case cudaSuccess:
      return CUBLAS_STATUS_SUCCESS;
    case cudaErrorNotSupported:
      return CUBLAS_STATUS_NOT_SUPPORTED;
    default:
      return CUBLAS_STATUS_EXECUTION_FAILED;  // "the GPU program failed to execute"
  }
}

cublasStatus_t NotSupported(const char* api, std::string_view what) {
  static std::mutex mutex;
  static auto* told = new std::set<std::string>;  // never destroyed: calls may come at exit
  std::lock_guard lock(mutex);
  if (told->insert(api).second) {
    std::fprintf(stderr,
                 "tally: %s: %.*s is not supported by Tally's kernels; returning "
                 "CUBLAS_STATUS_NOT_SUPPORTED\n",
                 api, static_cast<int>(what.size()), what.data());
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t LibraryProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VER_MAJOR;
      return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUBLAS_VER_MINOR;
      return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUBLAS_VER_PATCH;
      return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

const char* StatusName(cublasStatus_t status) {
  switch (status) {
#define TALLY_CUBLAS_STATUS(name, text) \
  case name:                            \
    return #name;
#include "libraries/blas/statuses.def"
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* StatusDescription(cublasStatus_t status) {
  switch (status) {
#define TALLY_CUBLAS_STATUS(name, text) \
  case name:                            \
    return text;
#include "libraries/blas/statuses.def"
  }
  return "unknown status";
}

kernels::Scalar ReadScalar(bool on_device, const void* scalar, kernels::ElementType type) {
  if (on_device) return {0, scalar};
  return {type == kernels::ElementType::kF64 ? *static_cast<const double*>(scalar)
                                             : double{*static_cast<const float*>(scalar)},
          nullptr};
}

void PutScalar(bool on_device, const void* scalar, size_t bytes, std::byte (&out)[16]) {
  if (on_device) {
    const uint64_t address = reinterpret_cast<uintptr_t>(scalar);
    std::memcpy(out, &address, sizeof(address));
  } else {
    std::memcpy(out, scalar, std::min(bytes, sizeof(out)));
  }
}

}  // namespace tally::libraries
