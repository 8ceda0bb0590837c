// Streams, runtime and driver API: created and destroyed on the server, named by its handles
// (CUstream and cudaStream_t are one type, and so are their flags' values). What never changes
// about a stream (flags, priority, context, id) is answered from the shim's record of it
// (client/streams.h).
//
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuStreamDestroy and cuStreamDestroy_v2 apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "client/capture.h"
#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/stream_work.h"
#include "client/streams.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CheckSynchronizing;
using tally::client::CudaError;
using tally::client::DriverError;
using tally::client::EnqueueHostFunction;
using tally::client::ForgetStream;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::StreamHandle;
using tally::client::StreamInfo;
using tally::client::Streams;
using tally::client::WaitEventOn;
namespace ipc = tally::ipc;

namespace tally::client {

absl::Status WaitEventOn(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if ((flags & ~unsigned{cudaEventWaitExternal}) != 0) {
    return CudaError(cudaErrorInvalidValue, "unknown stream wait flags");
  }
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureEventWait(stream, event, flags));
  if (captured) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::StreamWaitEventRequest{
      .flags = 0, .stream = StreamHandle(stream), .event = EventHandle(event)});
}

// Host functions run after the stream's preceding work and before its later work (CUDA Runtime
// API, cudaLaunchHostFunc): the server keeps that order and calls back into the shim's callback
// thread when the stream reaches the function (client/host_callbacks.cc). The call itself
// returns at once, after checking the stream: a function that would never run must not be
// reported later, at a synchronising call unrelated to it. Stream callbacks
// (cudaStreamAddCallback) cannot be captured; host functions become host nodes.
absl::Status EnqueueHostFunction(cudaStream_t stream, ipc::HostCallbackKind kind, void* function,
                                 void* data) {
  TALLY_RETURN_IF_ERROR(Streams::Get().Find(stream).status());
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureWork(stream, [&] {
                           return NodeWork(HostWork{
                               .function = reinterpret_cast<cudaHostFn_t>(function), .data = data});
                         }));
  if (captured) {
    if (kind == ipc::HostCallbackKind::kHostFunc) return absl::OkStatus();
    return CudaError(cudaErrorStreamCaptureUnsupported,
                     "stream callbacks cannot be captured; cudaLaunchHostFunc can");
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(channel->EnableHostCallbacks());
  return channel->Post(ipc::LaunchHostFuncRequest{.kind = static_cast<uint32_t>(kind),
                                                  .stream = StreamHandle(stream),
                                                  .app_stream = reinterpret_cast<uintptr_t>(stream),
                                                  .function = reinterpret_cast<uintptr_t>(function),
                                                  .data = reinterpret_cast<uintptr_t>(data)});
}

}  // namespace tally::client

namespace {

// A priority outside the device's range is clamped to it (CUDA Driver API,
// cuStreamCreateWithPriority); lower numbers are higher priorities.
absl::Status CreateStream(cudaStream_t* stream, unsigned int flags, int priority) {
  TALLY_RETURN_IF_ERROR(CheckOut(stream));
  if ((flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) {
    return CudaError(cudaErrorInvalidValue, "unknown stream flags");
  }
  TALLY_ASSIGN_OR_RETURN(*stream, Streams::Get().Create(flags, tally::StreamPriority(priority)));
  return absl::OkStatus();
}

absl::Status DestroyStream(cudaStream_t stream) {
  ForgetStream(stream);
  return Streams::Get().Destroy(stream);
}

// One field of a stream's record (cuStreamGetFlags, cuStreamGetPriority, ...).
template <typename Out, typename Field>
absl::Status QueryStream(cudaStream_t stream, Out* out, Field StreamInfo::*field) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(const StreamInfo info, Streams::Get().Find(stream));
  *out = info.*field;
  return absl::OkStatus();
}

// The number CUDA answers for a stream's priority.
absl::Status QueryPriority(cudaStream_t stream, int* priority) {
  TALLY_RETURN_IF_ERROR(CheckOut(priority));
  TALLY_ASSIGN_OR_RETURN(const StreamInfo info, Streams::Get().Find(stream));
  *priority = info.priority.value();
  return absl::OkStatus();
}

// Either output may be null (CUDA Runtime API, cudaDeviceGetStreamPriorityRange).
absl::Status GetPriorityRange(int* least, int* greatest) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  if (least != nullptr) *least = channel->device().stream_priority_least.value();
  if (greatest != nullptr) *greatest = channel->device().stream_priority_greatest.value();
  return absl::OkStatus();
}

// A sync call on one stream: synchronize or query.
template <typename Request>
absl::Status StreamCall(cudaStream_t stream) {
  TALLY_RETURN_IF_ERROR(CheckSynchronizing(stream));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(Request{.stream = StreamHandle(stream)}).status();
}

// Stream attributes (client/stream_attributes.h), kept in the stream's record.
absl::Status SetAttribute(cudaStream_t stream, cudaLaunchAttributeID id,
                          const cudaLaunchAttributeValue* value) {
  if (value == nullptr) return CudaError(cudaErrorInvalidValue, "null attribute value");
  return Streams::Get().Update(stream, [&](StreamInfo& info) {
    return SetStreamAttribute(info.attributes, info.priority, id, *value);
  });
}

absl::Status GetAttribute(cudaStream_t stream, cudaLaunchAttributeID id,
                          cudaLaunchAttributeValue* value) {
  TALLY_RETURN_IF_ERROR(CheckOut(value));
  TALLY_ASSIGN_OR_RETURN(const StreamInfo info, Streams::Get().Find(stream));
  return GetStreamAttribute(info.attributes, info.priority, id, *value);
}

absl::Status CopyAttributes(cudaStream_t dst, cudaStream_t src) {
  TALLY_ASSIGN_OR_RETURN(const StreamInfo from, Streams::Get().Find(src));
  return Streams::Get().Update(dst, [&](StreamInfo& info) {
    info.attributes = from.attributes;
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

cudaError_t cudaStreamSetAttribute(cudaStream_t stream, cudaLaunchAttributeID id,
                                   const cudaLaunchAttributeValue* value) {
  return RuntimeCall(__func__, [&] { return SetAttribute(stream, id, value); });
}

cudaError_t cudaStreamGetAttribute(cudaStream_t stream, cudaLaunchAttributeID id,
                                   cudaLaunchAttributeValue* value) {
  return RuntimeCall(__func__, [&] { return GetAttribute(stream, id, value); });
}

cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src) {
  return RuntimeCall(__func__, [&] { return CopyAttributes(dst, src); });
}

// Tally never keeps persisting L2 lines (stream_attributes.h): there are none to reset.
cudaError_t cudaCtxResetPersistingL2Cache() {
  return RuntimeCall(__func__, [] { return absl::OkStatus(); });
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return RuntimeCall(__func__, [&] { return CreateStream(stream, cudaStreamDefault, 0); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return CreateStream(stream, flags, 0); });
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return RuntimeCall(__func__, [&] { return CreateStream(stream, flags, priority); });
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  return RuntimeCall(__func__, [&] { return GetPriorityRange(least, greatest); });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return DestroyStream(stream); });
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  return RuntimeCall(__func__, [&] { return QueryStream(stream, flags, &StreamInfo::flags); });
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  return RuntimeCall(__func__, [&] { return QueryPriority(stream, priority); });
}

cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long* id) {
  return RuntimeCall(__func__, [&] { return QueryStream(stream, id, &StreamInfo::id); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return StreamCall<ipc::StreamSynchronizeRequest>(stream); });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return StreamCall<ipc::StreamQueryRequest>(stream); });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return WaitEventOn(stream, event, flags); });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t function, void* data) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (function == nullptr) return CudaError(cudaErrorInvalidValue, "null host function");
    return EnqueueHostFunction(stream, ipc::HostCallbackKind::kHostFunc,
                               reinterpret_cast<void*>(function), data);
  });
}

// As cudaLaunchHostFunc; the callback also receives the stream's status (CUDA Runtime API,
// cudaStreamAddCallback: flags must be 0).
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* data,
                                  unsigned int flags) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (callback == nullptr || flags != 0) {
      return CudaError(cudaErrorInvalidValue, "null callback or nonzero flags");
    }
    return EnqueueHostFunction(stream, ipc::HostCallbackKind::kStreamCallback,
                               reinterpret_cast<void*>(callback), data);
  });
}

// Driver API (CUDA Driver API, "Stream Management").

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return DriverCall(__func__, [&] { return CreateStream(stream, flags, 0); });
}

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return DriverCall(__func__, [&] { return CreateStream(stream, flags, priority); });
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  return DriverCall(__func__, [&] { return DestroyStream(stream); });
}

CUresult cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }

CUresult cuStreamSynchronize(CUstream stream) {
  return DriverCall(__func__, [&] { return StreamCall<ipc::StreamSynchronizeRequest>(stream); });
}

CUresult cuStreamQuery(CUstream stream) {
  return DriverCall(__func__, [&] { return StreamCall<ipc::StreamQueryRequest>(stream); });
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return DriverCall(__func__, [&] { return WaitEventOn(stream, event, flags); });
}

CUresult cuStreamGetFlags(CUstream stream, unsigned int* flags) {
  return DriverCall(__func__, [&] { return QueryStream(stream, flags, &StreamInfo::flags); });
}

CUresult cuStreamGetPriority(CUstream stream, int* priority) {
  return DriverCall(__func__, [&] { return QueryPriority(stream, priority); });
}

CUresult cuStreamGetId(CUstream stream, unsigned long long* id) {
  return DriverCall(__func__, [&] { return QueryStream(stream, id, &StreamInfo::id); });
}

// The context current on the creating thread; for the special handles, the calling thread's.
CUresult cuStreamGetCtx(CUstream stream, CUcontext* context) {
  return DriverCall(__func__, [&] { return QueryStream(stream, context, &StreamInfo::context); });
}

// Tally makes no green contexts: *green is always NULL.
CUresult cuStreamGetCtx_v2(CUstream stream, CUcontext* context, CUgreenCtx* green) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(green));
    TALLY_RETURN_IF_ERROR(QueryStream(stream, context, &StreamInfo::context));
    *green = nullptr;
    return absl::OkStatus();
  });
}

// As cudaLaunchHostFunc (CUDA Driver API, cuLaunchHostFunc).
CUresult cuLaunchHostFunc(CUstream stream, CUhostFn function, void* data) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (function == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null host function");
    return EnqueueHostFunction(stream, ipc::HostCallbackKind::kHostFunc,
                               reinterpret_cast<void*>(function), data);
  });
}

// As cudaStreamAddCallback: CUstreamCallback takes a CUresult where cudaStreamCallback_t takes
// a cudaError_t, the same value for every code the two enums share (client/status.h).
CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback callback, void* data,
                             unsigned int flags) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (callback == nullptr || flags != 0) {
      return DriverError(CUDA_ERROR_INVALID_VALUE, "null callback or nonzero flags");
    }
    return EnqueueHostFunction(stream, ipc::HostCallbackKind::kStreamCallback,
                               reinterpret_cast<void*>(callback), data);
  });
}

// The driver's stream attributes are the runtime's (CUstreamAttrValue and cudaStreamAttrValue,
// CUlaunchAttributeValue and cudaLaunchAttributeValue, share their layout and ids).
CUresult cuStreamSetAttribute(CUstream stream, CUstreamAttrID id, const CUstreamAttrValue* value) {
  return DriverCall(__func__, [&] {
    return SetAttribute(stream, static_cast<cudaLaunchAttributeID>(id),
                        reinterpret_cast<const cudaLaunchAttributeValue*>(value));
  });
}

CUresult cuStreamGetAttribute(CUstream stream, CUstreamAttrID id, CUstreamAttrValue* value) {
  return DriverCall(__func__, [&] {
    return GetAttribute(stream, static_cast<cudaLaunchAttributeID>(id),
                        reinterpret_cast<cudaLaunchAttributeValue*>(value));
  });
}

CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) {
  return DriverCall(__func__, [&] { return CopyAttributes(dst, src); });
}

CUresult cuCtxResetPersistingL2Cache() {
  return DriverCall(__func__, [] { return absl::OkStatus(); });
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  return DriverCall(__func__, [&] { return GetPriorityRange(least, greatest); });
}

}  // extern "C"
