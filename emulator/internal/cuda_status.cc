// CUresult payloads on absl::Status.
#include "emulator/internal/cuda_status.h"

#include <string>

#include "absl/strings/numbers.h"
#include "common/log.h"

namespace tally::emu {
namespace {

constexpr absl::string_view kPayloadUrl = "tally.emu/CUresult";

absl::StatusCode CanonicalCodeFor(CUresult code) {
  switch (code) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case CUDA_ERROR_NOT_SUPPORTED:
      return absl::StatusCode::kUnimplemented;
    case CUDA_ERROR_NOT_READY:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInvalidArgument;
  }
}

}  // namespace

absl::Status CudaError(CUresult code, std::string_view message) {
  absl::Status status(CanonicalCodeFor(code), absl::string_view(message.data(), message.size()));
  status.SetPayload(kPayloadUrl, absl::Cord(std::to_string(static_cast<int>(code))));
  return status;
}

CUresult ToCuResult(const absl::Status& status) {
  if (status.ok()) return CUDA_SUCCESS;
  TALLY_LOG_DEBUG("emu: {}", status.ToString());
  if (auto payload = status.GetPayload(kPayloadUrl)) {
    int value = 0;
    if (absl::SimpleAtoi(std::string(*payload), &value)) return static_cast<CUresult>(value);
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return CUDA_ERROR_INVALID_VALUE;
    case absl::StatusCode::kResourceExhausted:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case absl::StatusCode::kNotFound:
      return CUDA_ERROR_NOT_FOUND;
    case absl::StatusCode::kUnimplemented:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_UNKNOWN;
  }
}

}  // namespace tally::emu
