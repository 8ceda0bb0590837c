// Exports cuCtxSetLimit and cuCtxGetLimit for the current context (internal/limits.h lists the
// supported limits). Values above a limit's maximum are clamped, as the driver may do, or refused
// where NVIDIA's driver refuses them.
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>

#include "emulator/internal/entry.h"
#include "emulator/internal/limits.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::FindLimit;
using tally::emu::LimitInfo;
using tally::emu::Run;

namespace tally::emu {
namespace {

absl::StatusOr<const LimitInfo*> Supported(CUlimit limit) {
  const LimitInfo* info = FindLimit(limit);
  if (info == nullptr) {
    return CudaError(CUDA_ERROR_UNSUPPORTED_LIMIT,
                     fmt::format("limit {} is not supported", static_cast<int>(limit)));
  }
  return info;
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    TALLY_ASSIGN_OR_RETURN(const LimitInfo* info, tally::emu::Supported(limit));
    if (limit == CU_LIMIT_MALLOC_HEAP_SIZE && context->heap_fixed() &&
        value != context->limit(limit)) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       "the malloc heap size cannot change after a kernel that uses malloc ran");
    }
    // "If necessary, the device will block until all preceding requested tasks are complete."
    if (info->refuses_above_max && value > info->max_value) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       fmt::format("{} bytes is above the limit's maximum of {}", value,
                                   info->max_value));
    }
    if (limit == CU_LIMIT_STACK_SIZE) context->Synchronize();
    context->set_limit(limit, std::min(value, info->max_value));
    return absl::OkStatus();
  });
}

CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pvalue));
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    TALLY_RETURN_IF_ERROR(tally::emu::Supported(limit).status());
    *pvalue = context->limit(limit);
    return absl::OkStatus();
  });
}

}  // extern "C"
