// The one way an exported runtime entry point runs its body: noexcept, an exception barrier,
// the single absl::Status -> cudaError_t conversion, and the per-thread last error that
// cudaGetLastError reports (CUDA Runtime API, "Error Handling").
#pragma once

#include <cuda_runtime_api.h>

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
cudaError_t Run(const char* api, Body&& body) noexcept {
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

}  // namespace tally::client
