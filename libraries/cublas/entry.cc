// Statuses and scalars shared by the cuBLAS entry points.
#include "libraries/cublas/entry.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace tally::libraries::cublas {

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

kernels::Scalar ReadScalar(const Handle& handle, const void* scalar, kernels::ElementType type) {
  if (handle.pointer_mode == CUBLAS_POINTER_MODE_DEVICE) return {0, scalar};
  return {type == kernels::ElementType::kF64 ? *static_cast<const double*>(scalar)
                                             : double{*static_cast<const float*>(scalar)},
          nullptr};
}

}  // namespace tally::libraries::cublas
