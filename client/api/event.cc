// Events, runtime and driver API: created on the server; records are one-way and ordered with
// the client's other work (CUevent and cudaEvent_t are one type, and so are their flags' values).
//
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuEventDestroy and cuEventDestroy_v2 apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "client/capture.h"
#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/stream_work.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CreateEventWithFlags;
using tally::client::DestroyEvent;
using tally::client::EventHandle;
using tally::client::RecordEventOn;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::StreamHandle;
using tally::client::ToEvent;
namespace ipc = tally::ipc;

namespace tally::client {

absl::StatusOr<cudaEvent_t> CreateEventWithFlags(unsigned int flags) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::EventCreateRequest{.flags = flags}));
  return ToEvent(answer.fields.event);
}

absl::Status DestroyEvent(cudaEvent_t event) {
  ForgetEvent(event);
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(ipc::EventDestroyRequest{.event = EventHandle(event)}).status();
}

absl::Status RecordEventOn(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  if ((flags & ~unsigned{cudaEventRecordExternal}) != 0) {
    return CudaError(cudaErrorInvalidValue, "unknown event record flags");
  }
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureEventRecord(event, stream, flags));
  if (captured) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(
      ipc::EventRecordRequest{.event = EventHandle(event), .stream = StreamHandle(stream)});
}

}  // namespace tally::client

namespace {

absl::Status CreateEvent(cudaEvent_t* event, unsigned int flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(event));
  TALLY_ASSIGN_OR_RETURN(*event, CreateEventWithFlags(flags));
  return absl::OkStatus();
}

// A sync call on one event: synchronize or query.
template <typename Request>
absl::Status EventCall(cudaEvent_t event) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(Request{.event = EventHandle(event)}).status();
}

absl::Status ElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
  TALLY_RETURN_IF_ERROR(CheckOut(milliseconds));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::EventElapsedTimeRequest{
                                          .start = EventHandle(start), .end = EventHandle(end)}));
  *milliseconds = answer.fields.milliseconds;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return RuntimeCall(__func__, [&] { return CreateEvent(event, cudaEventDefault); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return CreateEvent(event, flags); });
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return RuntimeCall(__func__, [&] { return DestroyEvent(event); });
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return RuntimeCall(__func__, [&] { return EventCall<ipc::EventSynchronizeRequest>(event); });
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  return RuntimeCall(__func__, [&] { return EventCall<ipc::EventQueryRequest>(event); });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return RecordEventOn(event, stream); });
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return RecordEventOn(event, stream, flags); });
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
  return RuntimeCall(__func__, [&] { return ElapsedTime(milliseconds, start, end); });
}

// Driver API (CUDA Driver API, "Event Management").

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  return DriverCall(__func__, [&] { return CreateEvent(event, flags); });
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  return DriverCall(__func__, [&] { return RecordEventOn(event, stream); });
}

CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags) {
  return DriverCall(__func__, [&] { return RecordEventOn(event, stream, flags); });
}

CUresult cuEventSynchronize(CUevent event) {
  return DriverCall(__func__, [&] { return EventCall<ipc::EventSynchronizeRequest>(event); });
}

CUresult cuEventQuery(CUevent event) {
  return DriverCall(__func__, [&] { return EventCall<ipc::EventQueryRequest>(event); });
}

CUresult cuEventElapsedTime_v2(float* milliseconds, CUevent start, CUevent end) {
  return DriverCall(__func__, [&] { return ElapsedTime(milliseconds, start, end); });
}

CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(milliseconds, start, end);
}

CUresult cuEventDestroy_v2(CUevent event) {
  return DriverCall(__func__, [&] { return DestroyEvent(event); });
}

CUresult cuEventDestroy(CUevent event) { return cuEventDestroy_v2(event); }

}  // extern "C"
