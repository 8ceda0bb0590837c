// Conversions between the runtime's opaque handle types and the server's uint64_t handles,
// and the argument checks every entry point shares.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "client/status.h"

namespace tally::client {

// The server's handle of a stream: cudaStreamLegacy (driver_types.h) and NULL are the client's
// legacy default stream, 0 (each client's is private to it on the server); cudaStreamPerThread,
// and NULL inside a _ptsz/_ptds call, the calling thread's per-thread stream (streams.h).
uint64_t StreamHandle(cudaStream_t stream);
inline cudaStream_t ToStream(uint64_t handle) { return reinterpret_cast<cudaStream_t>(handle); }
inline uint64_t EventHandle(cudaEvent_t event) { return reinterpret_cast<uintptr_t>(event); }
inline cudaEvent_t ToEvent(uint64_t handle) { return reinterpret_cast<cudaEvent_t>(handle); }
inline uint64_t DevicePointer(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

// The primary context's handle (api/context.cc): the context of every allocation, since all of a
// client's contexts share its one server session.
CUcontext PrimaryContext();
// The calling thread's current context (the primary context where it made none current).
CUcontext CurrentContext();

// The server serves one device: the application's device 0.
inline absl::Status CheckDevice(int device) {
  if (device == 0) return absl::OkStatus();
  return CudaError(cudaErrorInvalidDevice, "Tally serves device 0 only");
}

// cudaErrorInvalidValue for a null output argument.
inline absl::Status CheckOut(const void* out) {
  if (out != nullptr) return absl::OkStatus();
  return CudaError(cudaErrorInvalidValue, "null output pointer");
}

}  // namespace tally::client
