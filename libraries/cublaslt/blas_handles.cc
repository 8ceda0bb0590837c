// The registry of live BLAS handles (blas_handles.h).
#include "libraries/cublaslt/blas_handles.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <unordered_map>

namespace tally::libraries {
namespace {

// The address an application holds is the key; the handle lives here until destroyed.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::unique_ptr<BlasHandle>> handles;
};

Registry& Live() {
  static auto* registry = new Registry;  // never destroyed: calls may come from exit handlers
  return *registry;
}

}  // namespace
}  // namespace tally::libraries

using tally::libraries::BlasHandle;

extern "C" {

cublasStatus_t tally_blas_handle_create(void** out) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto handle = std::make_unique<BlasHandle>();
  // Room for the widest result a reduction writes (a double).
  if (cudaMalloc(&handle->result, sizeof(double)) != cudaSuccess) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  auto& live = tally::libraries::Live();
  std::lock_guard lock(live.mutex);
  *out = handle.get();
  live.handles.emplace(handle.get(), std::move(handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t tally_blas_handle_destroy(const void* handle) {
  std::unique_ptr<BlasHandle> owned;
  {
    auto& live = tally::libraries::Live();
    std::lock_guard lock(live.mutex);
    auto it = live.handles.find(handle);
    if (it == live.handles.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
    owned = std::move(it->second);
    live.handles.erase(it);
  }
  cudaFree(owned->result);
  return CUBLAS_STATUS_SUCCESS;
}

BlasHandle* tally_blas_handle_find(const void* handle) {
  auto& live = tally::libraries::Live();
  std::lock_guard lock(live.mutex);
  auto it = live.handles.find(handle);
  return it == live.handles.end() ? nullptr : it->second.get();
}

}  // extern "C"
