// Statuses, the thread's last error and scalars of the cuDNN stand-in (status.h).
#include "libraries/cudnn/status.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

namespace tally::libraries::cudnn {
namespace {

thread_local std::string last_error;

// Says a NOT_SUPPORTED refusal on stderr once per entry point.
void TellOnce(const char* api, const std::string& why, cudnnStatus_t status) {
  static std::mutex mutex;
  static auto* told = new std::set<std::string>;  // never destroyed: calls may come at exit
  std::lock_guard lock(mutex);
  if (told->insert(api).second) {
    std::fprintf(stderr, "tally: %s: %s; returning %s\n", api, why.c_str(), StatusName(status));
  }
}

}  // namespace

void Refuse(cudnnStatus_t status, std::string why) { throw Refusal{status, std::move(why)}; }

void RefuseUnsupported(std::string what, cudnnStatus_t status) {
  throw Refusal{status, what + " is not supported by Tally's kernels"};
}

void CheckLaunch(cudaError_t launched) {
  if (launched == cudaSuccess) return;
  if (launched == cudaErrorNotSupported) RefuseUnsupported("this element type");
  Refuse(CUDNN_STATUS_EXECUTION_FAILED_CUDART,
         std::string("launching Tally's kernel failed: ") + cudaGetErrorName(launched));
}

cudnnStatus_t Record(const char* api, const Refusal& refusal) {
  last_error = std::string(api) + ": " + refusal.why;
  if (refusal.status / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000) {
    TellOnce(api, refusal.why, refusal.status);
  }
  return refusal.status;
}

const char* StatusName(cudnnStatus_t status) {
  switch (status) {
#define TALLY_CUDNN_STATUS(name) \
  case name:                     \
    return #name;
#include "libraries/cudnn/statuses.def"
    default:
      break;
  }
  return "CUDNN_STATUS_UNKNOWN";
}

void CopyLastError(char* message, size_t max_size) {
  if (message == nullptr || max_size == 0) return;
  const size_t length = std::min(last_error.size(), max_size - 1);
  std::memcpy(message, last_error.data(), length);
  message[length] = '\0';
}

kernels::ElementType ElementTypeOf(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
      return kernels::ElementType::kF32;
    case CUDNN_DATA_DOUBLE:
      return kernels::ElementType::kF64;
    case CUDNN_DATA_HALF:
      return kernels::ElementType::kF16;
    case CUDNN_DATA_BFLOAT16:
      return kernels::ElementType::kBF16;
    default:
      break;
  }
  RefuseUnsupported("data type " + std::to_string(type) + " (Tally's kernels take float, double, "
                    "half and bfloat16)",
                    CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
}

double ReadScalar(const void* scalar, cudnnDataType_t data, const char* what) {
  RequireNotNull(scalar, what);
  if (data == CUDNN_DATA_DOUBLE) return *static_cast<const double*>(scalar);
  return *static_cast<const float*>(scalar);
}

double ReadHostElement(const void* value, kernels::ElementType type) {
  RequireNotNull(value, "the value");
  switch (type) {
    case kernels::ElementType::kF32:
      return *static_cast<const float*>(value);
    case kernels::ElementType::kF64:
      return *static_cast<const double*>(value);
    case kernels::ElementType::kF16:
      return __half2float(*static_cast<const __half*>(value));
    case kernels::ElementType::kBF16:
      return __bfloat162float(*static_cast<const __nv_bfloat16*>(value));
  }
  Refuse(CUDNN_STATUS_BAD_PARAM, "unknown element type");
}

kernels::Blend ReadBlend(const void* alpha, const void* beta, cudnnDataType_t data) {
  return {ReadScalar(alpha, data, "alpha"), ReadScalar(beta, data, "beta")};
}

}  // namespace tally::libraries::cudnn
