// Exports stream management, cross-stream waits and host functions (cuStream*, cuLaunchHostFunc).
#include <cuda.h>

#include <algorithm>

#include "emulator/internal/entry.h"
#include "emulator/internal/submit.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

absl::Status CreateStream(Driver& driver, CUstream* phStream, unsigned flags, int priority) {
  TALLY_RETURN_IF_ERROR(CheckOut(phStream));
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown stream flags");
  }
  TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
  // "Priorities outside this range are clamped" (cuStreamCreateWithPriority).
  priority = std::clamp(priority, kGreatestStreamPriority, kLeastStreamPriority);
  *phStream = driver.streams().Insert(context->CreateStream(flags, priority));
  return absl::OkStatus();
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return Run([&](Driver& driver) {
    return tally::emu::CreateStream(driver, phStream, Flags, tally::emu::kLeastStreamPriority);
  });
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return Run(
      [&](Driver& driver) { return tally::emu::CreateStream(driver, phStream, flags, priority); });
}

// Returns at once; queued work still runs, and later NULL-stream work still waits for it
// ("the resources associated with hStream will be released automatically once the device has
// completed all work in hStream").
CUresult cuStreamDestroy_v2(CUstream hStream) {
  return Run([&](Driver& driver) -> absl::Status {
    if (Driver::IsNullStream(hStream)) {
      return CudaError(CUDA_ERROR_INVALID_HANDLE, "the NULL stream cannot be destroyed");
    }
    TALLY_ASSIGN_OR_RETURN(auto stream, driver.streams().Remove(hStream));
    if (auto context = stream->owner().lock()) context->RetireStream(stream);
    return absl::OkStatus();
  });
}

CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(priority));
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    *priority = bound.stream->priority();
    return absl::OkStatus();
  });
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    *flags = bound.stream->flags();
    return absl::OkStatus();
  });
}

// Synchronising the NULL stream enqueues a marker on it, so that (like any NULL-stream work) it
// also waits for all blocking streams.
CUresult cuStreamSynchronize(CUstream hStream) {
  return Run([&](Driver& driver) {
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    uint64_t seq = Driver::IsNullStream(hStream) ? bound.context->Enqueue(bound.stream, {}, [] {})
                                                 : bound.stream->last_enqueued();
    return tally::emu::WaitAndCheck(driver, *bound.context, *bound.stream, seq);
  });
}

CUresult cuStreamQuery(CUstream hStream) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    if (!bound.stream->Reached(bound.stream->last_enqueued())) {
      return CudaError(CUDA_ERROR_NOT_READY, "stream has pending work");
    }
    return absl::OkStatus();
  });
}

// Later work on hStream waits for the event's latest record; an event never recorded (or whose
// work is done) adds no dependency.
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return Run([&](Driver& driver) -> absl::Status {
    if (Flags != CU_EVENT_WAIT_DEFAULT && Flags != CU_EVENT_WAIT_EXTERNAL) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    }
    TALLY_ASSIGN_OR_RETURN(auto event, driver.events().Lookup(hEvent));
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    tally::emu::StreamPoint point;
    {
      std::lock_guard lock(event->mu);
      point = event->point;
    }
    if (point.stream == nullptr || point.stream->Reached(point.seq)) return absl::OkStatus();
    bound.context->Enqueue(bound.stream, {std::move(point)}, [] {});
    return absl::OkStatus();
  });
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                             unsigned int flags) {
  return Run([&](Driver& driver) -> absl::Status {
    if (callback == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null callback");
    if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    std::weak_ptr<tally::emu::Context> context = bound.context;
    bound.context->Enqueue(bound.stream, {}, [=] {
      auto owner = context.lock();
      callback(hStream, owner ? owner->sticky_error() : CUDA_ERROR_CONTEXT_IS_DESTROYED, userData);
    });
    return absl::OkStatus();
  });
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  return Run([&](Driver& driver) -> absl::Status {
    if (fn == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null host function");
    return tally::emu::Submit(
        driver, hStream, [=] { fn(userData); }, false);
  });
}

}  // extern "C"
