// A cuBLAS handle of the stand-in: the state frameworks set before every call (stream,
// workspace, pointer and math modes) kept in the application, so that setting it costs no round
// trip to the server. Handles are checked on every call: a null, foreign or destroyed handle is
// CUBLAS_STATUS_NOT_INITIALIZED, never a crash.
#pragma once

#include <cublas_v2.h>

#include <cstddef>

namespace tally::libraries::cublas {

struct Handle {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
  // Device memory for a reduction's result in pointer mode host (dot, nrm2), copied back from
  // there on the handle's stream.
  void* result = nullptr;
};

// A new handle (its result memory allocated on the device), registered as live.
cublasStatus_t CreateHandle(cublasHandle_t* out);
// Unregisters and frees it; NOT_INITIALIZED when it is not live.
cublasStatus_t DestroyHandle(cublasHandle_t handle);
// The live handle behind `handle`, or null.
Handle* FindHandle(cublasHandle_t handle);

}  // namespace tally::libraries::cublas
