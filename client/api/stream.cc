// Streams, runtime and driver API: created and destroyed on the server, named by its handles
// (CUstream and cudaStream_t are one type, and so are their flags' values).
//
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuStreamDestroy and cuStreamDestroy_v2 apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::Run;
using tally::client::RunDriver;
using tally::client::StreamHandle;
using tally::client::ToStream;
namespace ipc = tally::ipc;

namespace {

absl::Status CreateStream(cudaStream_t* stream, unsigned int flags, int priority) {
  TALLY_RETURN_IF_ERROR(CheckOut(stream));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::StreamCreateRequest{.flags = flags, .priority = priority}));
  *stream = ToStream(answer.fields.stream);
  return absl::OkStatus();
}

// Either output may be null (CUDA Runtime API, cudaDeviceGetStreamPriorityRange).
absl::Status GetPriorityRange(int* least, int* greatest) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  if (least != nullptr) *least = channel->device().stream_priority_least;
  if (greatest != nullptr) *greatest = channel->device().stream_priority_greatest;
  return absl::OkStatus();
}

// A sync call on one stream: destroy, synchronize or query.
template <typename Request>
absl::Status StreamCall(cudaStream_t stream) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(Request{.stream = StreamHandle(stream)}).status();
}

absl::Status WaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::StreamWaitEventRequest{
      .flags = flags, .stream = StreamHandle(stream), .event = tally::client::EventHandle(event)});
}

// Host functions run after the stream's preceding work and before its later work (CUDA Runtime
// API, cudaLaunchHostFunc): the server keeps that order and calls back into the shim's callback
// thread when the stream reaches the function (client/host_callbacks.cc). The call itself
// returns at once; a bad stream surfaces at the next synchronising call.
absl::Status LaunchHostCallback(cudaStream_t stream, ipc::HostCallbackKind kind, void* function,
                                void* data) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(channel->EnableHostCallbacks());
  return channel->Post(ipc::LaunchHostFuncRequest{.kind = static_cast<uint32_t>(kind),
                                                  .stream = StreamHandle(stream),
                                                  .app_stream = reinterpret_cast<uintptr_t>(stream),
                                                  .function = reinterpret_cast<uintptr_t>(function),
                                                  .data = reinterpret_cast<uintptr_t>(data)});
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return Run(__func__, [&] { return CreateStream(stream, cudaStreamDefault, 0); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  return Run(__func__, [&] { return CreateStream(stream, flags, 0); });
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  return Run(__func__, [&] { return CreateStream(stream, flags, priority); });
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  return Run(__func__, [&] { return GetPriorityRange(least, greatest); });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return Run(__func__, [&] { return StreamCall<ipc::StreamDestroyRequest>(stream); });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return Run(__func__, [&] { return StreamCall<ipc::StreamSynchronizeRequest>(stream); });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return Run(__func__, [&] { return StreamCall<ipc::StreamQueryRequest>(stream); });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return Run(__func__, [&] { return WaitEvent(stream, event, flags); });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t function, void* data) {
  return Run(__func__, [&]() -> absl::Status {
    if (function == nullptr) return CudaError(cudaErrorInvalidValue, "null host function");
    return LaunchHostCallback(stream, ipc::HostCallbackKind::kHostFunc,
                              reinterpret_cast<void*>(function), data);
  });
}

// As cudaLaunchHostFunc; the callback also receives the stream's status (CUDA Runtime API,
// cudaStreamAddCallback: flags must be 0).
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* data,
                                  unsigned int flags) {
  return Run(__func__, [&]() -> absl::Status {
    if (callback == nullptr || flags != 0) {
      return CudaError(cudaErrorInvalidValue, "null callback or nonzero flags");
    }
    return LaunchHostCallback(stream, ipc::HostCallbackKind::kStreamCallback,
                              reinterpret_cast<void*>(callback), data);
  });
}

// Driver API (CUDA Driver API, "Stream Management").

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  return RunDriver(__func__, [&] { return CreateStream(stream, flags, 0); });
}

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  return RunDriver(__func__, [&] { return CreateStream(stream, flags, priority); });
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  return RunDriver(__func__, [&] { return StreamCall<ipc::StreamDestroyRequest>(stream); });
}

CUresult cuStreamDestroy(CUstream stream) { return cuStreamDestroy_v2(stream); }

CUresult cuStreamSynchronize(CUstream stream) {
  return RunDriver(__func__, [&] { return StreamCall<ipc::StreamSynchronizeRequest>(stream); });
}

CUresult cuStreamQuery(CUstream stream) {
  return RunDriver(__func__, [&] { return StreamCall<ipc::StreamQueryRequest>(stream); });
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  return RunDriver(__func__, [&] { return WaitEvent(stream, event, flags); });
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  return RunDriver(__func__, [&] { return GetPriorityRange(least, greatest); });
}

}  // extern "C"
