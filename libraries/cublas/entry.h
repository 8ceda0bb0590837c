// How every cuBLAS entry point of the stand-in runs: noexcept (an exception barrier), the handle
// checked, and the kernels' launch results turned into cuBLAS statuses in one place.
#pragma once

#include <cublas_v2.h>

#include <string_view>
#include <type_traits>
#include <utility>

#include "libraries/cublas/handle.h"
#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries::cublas {

// The element type of the float and double entry points (cublasS..., cublasD...).
template <typename T>
constexpr kernels::ElementType kElement =
    std::is_same_v<T, double> ? kernels::ElementType::kF64 : kernels::ElementType::kF32;

// The status of a launch of Tally's kernels.
cublasStatus_t FromLaunch(cudaError_t launched);

// NOT_SUPPORTED for a call Tally's kernels cannot serve, naming what is missing on stderr (once
// per entry point).
cublasStatus_t NotSupported(const char* api, std::string_view what);

// A scalar argument as the kernels take it: read now in pointer mode host, else its address.
kernels::Scalar ReadScalar(const Handle& handle, const void* scalar, kernels::ElementType type);

template <typename Body>
cublasStatus_t Run(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return CUBLAS_STATUS_INTERNAL_ERROR;  // std::bad_alloc: never across the C ABI
  }
}

// Runs `body(Handle&)` for a live handle; NOT_INITIALIZED for any other.
template <typename Body>
cublasStatus_t RunWithHandle(cublasHandle_t handle, Body&& body) noexcept {
  return Run([&]() -> cublasStatus_t {
    Handle* live = FindHandle(handle);
    if (live == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
    return std::forward<Body>(body)(*live);
  });
}

}  // namespace tally::libraries::cublas
