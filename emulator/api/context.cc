// Exports primary-context management and cuCtx*: creation, the per-thread context stack,
// synchronisation and queries.
#include <cuda.h>

#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::Context;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

// cuCtxCreate / cuDevicePrimaryCtxSetFlags accept scheduling flags, CU_CTX_MAP_HOST (always on
// with unified addressing) and CU_CTX_LMEM_RESIZE_TO_MAX; the rest are rejected.
absl::Status CheckContextFlags(unsigned flags) {
  constexpr unsigned kKnown = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX;
  if ((flags & ~kKnown) != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown context flags");
  return absl::OkStatus();
}

absl::Status CreateContext(Driver& driver, CUcontext* pctx, unsigned flags, CUdevice dev) {
  TALLY_RETURN_IF_ERROR(CheckOut(pctx));
  TALLY_RETURN_IF_ERROR(CheckContextFlags(flags));
  TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
  TALLY_ASSIGN_OR_RETURN(*pctx, driver.CreateContext(flags));
  return absl::OkStatus();
}

// The context a `ctx` argument names: NULL means the calling thread's current context.
absl::StatusOr<std::shared_ptr<Context>> ContextOrCurrent(Driver& driver, CUcontext ctx) {
  if (ctx == nullptr) return driver.CurrentContext();
  return driver.LookupContext(ctx);
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(pctx));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    *pctx = driver.PrimaryRetain();
    return absl::OkStatus();
  });
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    return driver.PrimaryRelease();
  });
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    driver.PrimaryReset();
    return absl::OkStatus();
  });
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    TALLY_RETURN_IF_ERROR(CheckOut(active));
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    *flags = driver.primary()->flags();
    *active = driver.primary()->active() ? 1 : 0;
    return absl::OkStatus();
  });
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(driver.CheckDevice(dev));
    TALLY_RETURN_IF_ERROR(tally::emu::CheckContextFlags(flags));
    driver.primary()->set_flags(flags);
    return absl::OkStatus();
  });
}

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return Run([&](Driver& driver) { return tally::emu::CreateContext(driver, pctx, flags, dev); });
}

// Execution-affinity and CIG parameters configure hardware partitioning the emulator does not
// have; a context asking for them is refused rather than silently created without them.
CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags,
                        CUdevice dev) {
  return Run([&](Driver& driver) -> absl::Status {
    if (ctxCreateParams != nullptr &&
        (ctxCreateParams->numExecAffinityParams != 0 || ctxCreateParams->cigParams != nullptr)) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "execution affinity / CIG contexts");
    }
    return tally::emu::CreateContext(driver, pctx, flags, dev);
  });
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return Run([&](Driver& driver) { return driver.DestroyContext(ctx); });
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  return Run([&](Driver&) {
    TALLY_RETURN_IF_ERROR(CheckOut(pctx));
    const auto& stack = Driver::ContextStack();
    *pctx = stack.empty() ? nullptr : stack.back();
    return absl::OkStatus();
  });
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  return Run([&](Driver& driver) -> absl::Status {
    auto& stack = Driver::ContextStack();
    // "If ctx is NULL then this will be equivalent to popping the top of the calling CPU
    // thread's CUDA context stack (or a no-op if [it] is empty)."
    if (ctx == nullptr) {
      if (!stack.empty()) stack.pop_back();
      return absl::OkStatus();
    }
    TALLY_RETURN_IF_ERROR(driver.LookupContext(ctx).status());
    if (stack.empty()) {
      stack.push_back(ctx);
    } else {
      stack.back() = ctx;
    }
    return absl::OkStatus();
  });
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(driver.LookupContext(ctx).status());
    Driver::ContextStack().push_back(ctx);
    return absl::OkStatus();
  });
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  return Run([&](Driver&) {
    auto& stack = Driver::ContextStack();
    if (stack.empty()) return CudaError(CUDA_ERROR_INVALID_CONTEXT, "context stack is empty");
    if (pctx != nullptr) *pctx = stack.back();
    stack.pop_back();
    return absl::OkStatus();
  });
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return Run([&](Driver& driver) {
    TALLY_ASSIGN_OR_RETURN(auto context, tally::emu::ContextOrCurrent(driver, ctx));
    context->Synchronize();
    if (CUresult sticky = context->sticky_error(); sticky != CUDA_SUCCESS) {
      return CudaError(sticky, "asynchronous work failed");
    }
    return absl::OkStatus();
  });
}

CUresult cuCtxSynchronize() { return cuCtxSynchronize_v2(nullptr); }

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(device));
    TALLY_RETURN_IF_ERROR(tally::emu::ContextOrCurrent(driver, ctx).status());
    *device = 0;
    return absl::OkStatus();
  });
}

CUresult cuCtxGetDevice(CUdevice* device) { return cuCtxGetDevice_v2(device, nullptr); }

// Lower numbers are higher priorities (CUDA driver API, cuCtxGetStreamPriorityRange).
CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  return Run([&](Driver&) {
    if (leastPriority != nullptr) *leastPriority = 0;
    if (greatestPriority != nullptr) *greatestPriority = -5;
    return absl::OkStatus();
  });
}

}  // extern "C"
