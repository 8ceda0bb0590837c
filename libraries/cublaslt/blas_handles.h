// The BLAS handles of the stand-ins: cuBLAS handles and cuBLASLt handles in one registry, kept in
// libcublasLt.so.13 (which libcublas.so.13 needs, as NVIDIA's does), because frameworks pass a
// cuBLAS handle where cuBLASLt wants its own (PyTorch casts one to the other). The state
// frameworks set before every call (stream, workspace, pointer and math modes) lives here, in
// the application: setting it costs no round trip. A null, foreign or destroyed handle is not
// found, never dereferenced.
#pragma once

#include <cublas_v2.h>

#include <cstddef>

namespace tally::libraries {

struct BlasHandle {
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

}  // namespace tally::libraries

// Exported by libcublasLt.so.13 under the version TALLY_PRIVATE (not cuBLASLt's API).
extern "C" {
// A new handle (its result memory allocated on the device), registered as live.
cublasStatus_t tally_blas_handle_create(void** out);
// Unregisters and frees it; CUBLAS_STATUS_NOT_INITIALIZED when it is not live.
cublasStatus_t tally_blas_handle_destroy(const void* handle);
// The live handle behind `handle`, or null.
tally::libraries::BlasHandle* tally_blas_handle_find(const void* handle);
}
