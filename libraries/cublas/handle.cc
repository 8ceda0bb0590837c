// The registry of live cuBLAS handles.
#include "libraries/cublas/handle.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <unordered_map>

namespace tally::libraries::cublas {
namespace {

// The address an application holds is the key; the handle lives here until destroyed.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::unique_ptr<Handle>> handles;
};

Registry& Live() {
  static auto* registry = new Registry;  // never destroyed: calls may come from exit handlers
  return *registry;
}

}  // namespace

cublasStatus_t CreateHandle(cublasHandle_t* out) {
  if (out == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  auto handle = std::make_unique<Handle>();
  // Room for the widest result a reduction writes (a double).
  if (cudaMalloc(&handle->result, sizeof(double)) != cudaSuccess) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  Registry& live = Live();
  std::lock_guard lock(live.mutex);
  *out = reinterpret_cast<cublasHandle_t>(handle.get());
  live.handles.emplace(handle.get(), std::move(handle));
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t DestroyHandle(cublasHandle_t handle) {
  std::unique_ptr<Handle> owned;
  {
    Registry& live = Live();
    std::lock_guard lock(live.mutex);
    auto it = live.handles.find(handle);
    if (it == live.handles.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
    owned = std::move(it->second);
    live.handles.erase(it);
  }
  cudaFree(owned->result);
  return CUBLAS_STATUS_SUCCESS;
}

Handle* FindHandle(cublasHandle_t handle) {
  Registry& live = Live();
  std::lock_guard lock(live.mutex);
  auto it = live.handles.find(handle);
  return it == live.handles.end() ? nullptr : it->second.get();
}

}  // namespace tally::libraries::cublas
