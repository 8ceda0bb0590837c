// Stream submission: resolves the stream in the current context and enqueues in legacy order.
#include "emulator/internal/submit.h"

#include "common/status.h"

namespace tally::emu {

absl::Status WaitAndCheck(Driver& driver, const Context& context, const Stream& stream,
                          uint64_t seq) {
  stream.WaitFor(seq);
  if (CUresult sticky = context.sticky_error(); sticky != CUDA_SUCCESS) {
    return CudaError(sticky, "asynchronous work failed");
  }
  if (CUresult fault = driver.tenant_faults().Error(stream.tenant()); fault != CUDA_SUCCESS) {
    return CudaError(fault, "asynchronous work of the stream's tenant failed");
  }
  return absl::OkStatus();
}

absl::Status Submit(Driver& driver, CUstream stream, std::function<void()> work, bool wait) {
  TALLY_ASSIGN_OR_RETURN(Driver::BoundStream target, driver.ResolveStream(wait ? nullptr : stream));
  uint64_t seq = target.context->Enqueue(target.stream, {}, std::move(work));
  if (!wait) return absl::OkStatus();
  return WaitAndCheck(driver, *target.context, *target.stream, seq);
}

}  // namespace tally::emu
