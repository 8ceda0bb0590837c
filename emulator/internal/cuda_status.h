// CUresult <-> absl::Status: internal code returns Status with the intended CUresult attached,
// and the C ABI layer converts it back in exactly one place (ToCuResult).
#pragma once

#include <cuda.h>

#include <string_view>

#include "absl/status/status.h"

namespace tally::emu {

// An error status that converts to `code` at the C ABI (the message is logged at debug level).
absl::Status CudaError(CUresult code, std::string_view message);

// The CUresult carried by `status`; statuses without one map by canonical code
// (invalid argument -> CUDA_ERROR_INVALID_VALUE, resource exhausted -> OUT_OF_MEMORY, ...).
CUresult ToCuResult(const absl::Status& status);

}  // namespace tally::emu
