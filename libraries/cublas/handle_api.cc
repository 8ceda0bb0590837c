// cuBLAS handles and their settings, versions and status names: answered in the application.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include "libraries/cublas/entry.h"

using tally::ipc::Library;
using tally::libraries::BlasCall;
using tally::libraries::cublas::Handle;
using tally::libraries::cublas::BlasCallWithHandle;

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  return BlasCall<Library::kCublas>([&] { return tally::libraries::cublas::CreateHandle(handle); });
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  return BlasCall<Library::kCublas>(
      [&] { return tally::libraries::cublas::DestroyHandle(handle); });
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  return BlasCallWithHandle(handle, [&](Handle&) {
    if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *version = CUBLAS_VERSION;  // the API the stand-in answers: the toolkit's it was built with
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return BlasCall<Library::kCublas>([&] { return tally::libraries::LibraryProperty(type, value); });
}

size_t cublasGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    h.stream = stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = h.stream;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// Tally's kernels need no workspace: the setting is kept, as cuBLAS keeps it, and unused.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (workspace == nullptr && bytes != 0) return CUBLAS_STATUS_INVALID_VALUE;
    h.workspace = workspace;
    h.workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h.pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    h.pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

// The math mode allows reduced precision (TF32, ...); Tally's kernels compute in full f32, which
// every mode allows.
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h.math_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    h.math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t* mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = h.atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    h.atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
  });
}

const char* cublasGetStatusName(cublasStatus_t status) {
  return tally::libraries::StatusName(status);
}

const char* cublasGetStatusString(cublasStatus_t status) {
  return tally::libraries::StatusDescription(status);
}

}  // extern "C"
