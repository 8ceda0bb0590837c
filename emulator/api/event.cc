// Exports cuEvent*: record points in streams, wait for them, and time between them.
#include <cuda.h>

#include <chrono>

#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Event;
using tally::emu::Run;

namespace tally::emu {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The latest record's point, or {nullptr} when never recorded.
StreamPoint RecordedPoint(Event& event) {
  std::lock_guard lock(event.mu);
  return event.point;
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(phEvent));
    constexpr unsigned kKnown = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING;
    if ((Flags & ~kKnown) != 0) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown or unsupported event flags");
    }
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    *phEvent = driver.events().Insert(std::make_shared<Event>(context->id(), Flags));
    return absl::OkStatus();
  });
}

// The event captures everything enqueued on hStream so far; the record work stamps the time
// when the stream reaches it (only for the latest record, as a re-record supersedes).
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Event> event, driver.events().Lookup(hEvent));
    TALLY_ASSIGN_OR_RETURN(auto bound, driver.ResolveStream(hStream));
    if (bound.context->id() != event->context_id) {
      return CudaError(CUDA_ERROR_INVALID_HANDLE, "event and stream are in different contexts");
    }
    uint64_t generation;
    {
      std::lock_guard lock(event->mu);
      generation = ++event->generation;
      event->time_ns = -1;
    }
    uint64_t seq = bound.context->Enqueue(bound.stream, {}, [event, generation] {
      std::lock_guard lock(event->mu);
      if (event->generation == generation) event->time_ns = tally::emu::NowNs();
    });
    std::lock_guard lock(event->mu);
    if (event->generation == generation) event->point = {bound.stream, seq};
    return absl::OkStatus();
  });
}

CUresult cuEventSynchronize(CUevent hEvent) {
  return Run([&](Driver& driver) {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Event> event, driver.events().Lookup(hEvent));
    tally::emu::StreamPoint point = tally::emu::RecordedPoint(*event);
    if (point.stream != nullptr) point.stream->WaitFor(point.seq);
    return absl::OkStatus();
  });
}

CUresult cuEventQuery(CUevent hEvent) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Event> event, driver.events().Lookup(hEvent));
    TALLY_RETURN_IF_ERROR(driver.CurrentContextSticky());
    tally::emu::StreamPoint point = tally::emu::RecordedPoint(*event);
    if (point.stream != nullptr && !point.stream->Reached(point.seq)) {
      return CudaError(CUDA_ERROR_NOT_READY, "event not reached yet");
    }
    return absl::OkStatus();
  });
}

// CUDA driver API, cuEventElapsedTime: INVALID_HANDLE when either event was never recorded or
// was created with CU_EVENT_DISABLE_TIMING; NOT_READY while either record is pending.
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pMilliseconds));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Event> start, driver.events().Lookup(hStart));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Event> end, driver.events().Lookup(hEnd));
    int64_t times[2];
    Event* events[2] = {start.get(), end.get()};
    for (int i = 0; i < 2; ++i) {
      std::lock_guard lock(events[i]->mu);
      if (events[i]->point.stream == nullptr || (events[i]->flags & CU_EVENT_DISABLE_TIMING)) {
        return CudaError(CUDA_ERROR_INVALID_HANDLE, "event not recorded or without timing");
      }
      if (events[i]->time_ns < 0) return CudaError(CUDA_ERROR_NOT_READY, "event not reached");
      times[i] = events[i]->time_ns;
    }
    *pMilliseconds = static_cast<float>(static_cast<double>(times[1] - times[0]) / 1e6);
    return absl::OkStatus();
  });
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  return Run([&](Driver& driver) { return driver.events().Remove(hEvent).status(); });
}

}  // extern "C"
