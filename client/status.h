// Errors inside the shim: an absl::Status that may carry the cudaError_t the application gets.
// Converted to cudaError_t in one place (entry.h); a Status without one is a transport failure
// (no server, server gone) and reads as cudaErrorDevicesUnavailable.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tally::client {

absl::Status CudaError(cudaError_t error, absl::string_view message);
cudaError_t ToCudaError(const absl::Status& status);

// The driver API's view of the same errors: a driver entry point's status built with
// DriverError, or a runtime error mapped to the CUresult a driver call reports for it (equal
// values where cuda.h has the code).
absl::Status DriverError(CUresult error, absl::string_view message);
CUresult ToCuResult(const absl::Status& status);

// The runtime error for a driver CUresult from the server. The two enums share their values
// for every code both have (cuda.h and driver_types.h); others read as cudaErrorUnknown.
cudaError_t FromDriverResult(int32_t result);

// cudaGetErrorName / cudaGetErrorString; nullptr for a value that is no cudaError_t.
const char* ErrorName(cudaError_t error);
const char* ErrorDescription(cudaError_t error);

}  // namespace tally::client
