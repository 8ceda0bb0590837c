// A cuBLAS handle of the stand-in is a BLAS handle of the registry libcublasLt.so.13 keeps
// (libraries/cublaslt/blas_handles.h), so that cuBLASLt accepts it too.
#pragma once

#include <cublas_v2.h>

#include "libraries/cublaslt/blas_handles.h"

namespace tally::libraries::cublas {

using Handle = BlasHandle;

inline cublasStatus_t CreateHandle(cublasHandle_t* out) {
  return tally_blas_handle_create(reinterpret_cast<void**>(out));
}
inline cublasStatus_t DestroyHandle(cublasHandle_t handle) {
  return tally_blas_handle_destroy(handle);
}
inline Handle* FindHandle(cublasHandle_t handle) { return tally_blas_handle_find(handle); }

}  // namespace tally::libraries::cublas
