// The one way an exported entry point runs its body: noexcept, an exception barrier and the
// single absl::Status -> error code conversion. Runtime entry points (Run) return cudaError_t
// and keep the per-thread last error that cudaGetLastError reports (CUDA Runtime API, "Error
// Handling"); driver entry points (RunDriver) return CUresult and leave that error alone.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <utility>

#include "absl/status/status.h"
#include "client/status.h"

namespace tally::client {

// Records `error` as the calling thread's last error (unless it is cudaSuccess); returns it.
cudaError_t RecordError(cudaError_t error);
// The last error, reset to cudaSuccess when `reset`.
cudaError_t LastError(bool reset);
// Logs a failed call at debug level (and transport failures once, as errors: they explain
// why every later call fails).
void LogFailure(const char* api, const absl::Status& status);

template <typename Body>
cudaError_t RuntimeCall(const char* api, Body&& body) noexcept {
  try {
    const absl::Status status = body();
    if (status.ok()) return cudaSuccess;
    LogFailure(api, status);
    return RecordError(ToCudaError(status));
  } catch (...) {
    // std::bad_alloc and friends: never let them cross the C ABI into the application.
    return RecordError(cudaErrorUnknown);
  }
}

// Whether the driver API may be used: after cuInit, or once the runtime API has connected (the
// CUDA runtime initialises the driver itself).
bool DriverInitialized();

template <typename Body>
CUresult DriverCallAnyState(const char* api, Body&& body) noexcept {
  try {
    const absl::Status status = body();
    if (status.ok()) return CUDA_SUCCESS;
    LogFailure(api, status);
    return ToCuResult(status);
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

// For driver entry points that need cuInit: CUDA_ERROR_NOT_INITIALIZED before it.
template <typename Body>
CUresult DriverCall(const char* api, Body&& body) noexcept {
  if (!DriverInitialized()) return CUDA_ERROR_NOT_INITIALIZED;
  return DriverCallAnyState(api, std::forward<Body>(body));
}

}  // namespace tally::client
