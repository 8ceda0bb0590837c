// How every cuBLAS entry point of the stand-in runs: noexcept and counted as a cuBLAS call
// (libraries/blas/calls.h), the handle checked, scalars read as the handle's pointer mode says.
#pragma once

#include <cublas_v2.h>

#include <utility>

#include "libraries/blas/calls.h"
#include "libraries/cublas/handle.h"

namespace tally::libraries::cublas {

// A scalar argument as the kernels take it, in the handle's pointer mode.
inline kernels::Scalar ReadScalar(const Handle& handle, const void* scalar,
                                  kernels::ElementType type) {
  return libraries::ReadScalar(handle.pointer_mode == CUBLAS_POINTER_MODE_DEVICE, scalar, type);
}

// Runs `body(Handle&)` for a live handle; NOT_INITIALIZED for any other.
template <typename Body>
cublasStatus_t BlasCallWithHandle(cublasHandle_t handle, Body&& body) noexcept {
  return BlasCall<ipc::Library::kCublas>([&]() -> cublasStatus_t {
    Handle* live = FindHandle(handle);
    if (live == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    return std::forward<Body>(body)(*live);
  });
}

}  // namespace tally::libraries::cublas
