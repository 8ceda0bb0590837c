// The cudaError_t table generated from driver_types.h, and the Status payload that carries a
// cudaError_t through TALLY_RETURN_IF_ERROR.
#include "client/status.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "cuda_abi/cu_result_table.h"

namespace tally::client {
namespace {

constexpr absl::string_view kErrorPayload = "tally.cuda/cudaError_t";

struct ErrorInfo {
  cudaError_t error;
  const char* name;
  const char* description;
};

constexpr ErrorInfo kErrors[] = {
#define TALLY_CUDA_ERROR(name, description) {name, #name, description},
#include "client/cuda_errors.def"
};

const ErrorInfo* Find(int value) {
  for (const ErrorInfo& info : kErrors) {
    if (static_cast<int>(info.error) == value) return &info;
  }
  return nullptr;
}

}  // namespace

absl::Status CudaError(cudaError_t error, absl::string_view message) {
  absl::Status status(absl::StatusCode::kFailedPrecondition, message);
  status.SetPayload(kErrorPayload, absl::Cord(std::to_string(static_cast<int>(error))));
  return status;
}

cudaError_t ToCudaError(const absl::Status& status) {
  if (status.ok()) return cudaSuccess;
  const auto payload = status.GetPayload(kErrorPayload);
  int value = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &value)) {
    return cudaErrorDevicesUnavailable;
  }
  return static_cast<cudaError_t>(value);
}

// The payload is the code's value: CUresult and cudaError_t share the values of the codes both
// have, and a driver status never reaches a runtime entry point.
absl::Status DriverError(CUresult error, absl::string_view message) {
  return CudaError(static_cast<cudaError_t>(error), message);
}

CUresult ToCuResult(const absl::Status& status) {
  const cudaError_t error = ToCudaError(status);
  if (CuResultName(static_cast<CUresult>(error)) != nullptr) return static_cast<CUresult>(error);
  switch (error) {  // runtime-only codes
    case cudaErrorInvalidSymbol:
      return CUDA_ERROR_NOT_FOUND;
    case cudaErrorInvalidDeviceFunction:
      return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorPriorLaunchFailure:
      return CUDA_ERROR_LAUNCH_FAILED;
    case cudaErrorStartupFailure:
      return CUDA_ERROR_UNKNOWN;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

cudaError_t FromDriverResult(int32_t result) {
  const ErrorInfo* info = Find(result);
  return info != nullptr ? info->error : cudaErrorUnknown;
}

const char* ErrorName(cudaError_t error) {
  const ErrorInfo* info = Find(static_cast<int>(error));
  return info != nullptr ? info->name : nullptr;
}

const char* ErrorDescription(cudaError_t error) {
  const ErrorInfo* info = Find(static_cast<int>(error));
  return info != nullptr ? info->description : nullptr;
}

}  // namespace tally::client

// unsupported.cc returns this value without including the CUDA headers.
static_assert(cudaErrorNotSupported == 801);
