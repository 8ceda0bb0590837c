// The one boundary between exported C entry points and the emulator: state checks, the
// exception barrier and the Status -> CUresult conversion. cuda.h declares the entry points
// without `noexcept` (and C++ forbids redeclaring them with it), so each export's body is a
// single call to these noexcept functions instead.
#pragma once

#include <cuda.h>

#include <new>
#include <shared_mutex>

#include "absl/status/status.h"
#include "common/status.h"
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/driver.h"

namespace tally::emu {

// For entry points that work in any driver state (cuDriverGetVersion, cuGetErrorName, ...).
template <typename Body>
CUresult RunAnyState(Body&& body) noexcept {
  try {
    return ToCuResult(body());
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}

// For entry points that need cuInit: NOT_INITIALIZED before it, DEINITIALIZED after teardown.
// The state is checked under the API lock, so the driver cannot be torn down mid-call.
template <typename Body>
CUresult Run(Body&& body) noexcept {
  std::shared_lock lock(Driver::ApiMutex());
  switch (Driver::State()) {
    case DriverState::kUninitialized:
      return CUDA_ERROR_NOT_INITIALIZED;
    case DriverState::kShutDown:
      return CUDA_ERROR_DEINITIALIZED;
    case DriverState::kReady:
      break;
  }
  return RunAnyState([&] { return body(Driver::Get()); });
}

// INVALID_VALUE for a null output pointer.
template <typename T>
absl::Status CheckOut(T* pointer) {
  if (pointer == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null output pointer");
  return absl::OkStatus();
}

}  // namespace tally::emu
