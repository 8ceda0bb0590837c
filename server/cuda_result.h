// Errors answered to a client: an absl::Status carrying the CUresult the client receives. A
// Status without one is a protocol violation (malformed message) and ends the session instead.
#pragma once

#include <cuda.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tally::server {

// A failure caused by (and reported to) the client, e.g. CUDA_ERROR_INVALID_HANDLE.
absl::Status ClientError(CUresult result, absl::string_view message);

// OK for CUDA_SUCCESS, else ClientError(result, "<call> failed with CUresult N").
absl::Status CheckCu(CUresult result, absl::string_view call);

// cuda.h's name of `result` ("CUDA_ERROR_INVALID_VALUE"), or "CUresult N" for a value it lacks.
std::string CuResultText(CUresult result);

// The CUresult a ClientError carries; nullopt for any other status (and for OK).
std::optional<CUresult> ResultOf(const absl::Status& status);

}  // namespace tally::server
