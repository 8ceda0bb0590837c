// Streams: created and destroyed on the server, named by its handles.
#include <cuda_runtime_api.h>

#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::Run;
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
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    // Either output may be null (CUDA Runtime API, cudaDeviceGetStreamPriorityRange).
    if (least != nullptr) *least = channel->device().stream_priority_least;
    if (greatest != nullptr) *greatest = channel->device().stream_priority_greatest;
    return absl::OkStatus();
  });
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel->Call(ipc::StreamDestroyRequest{.stream = StreamHandle(stream)}).status();
  });
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel->Call(ipc::StreamSynchronizeRequest{.stream = StreamHandle(stream)}).status();
  });
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel->Call(ipc::StreamQueryRequest{.stream = StreamHandle(stream)}).status();
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel->Post(ipc::StreamWaitEventRequest{.flags = flags,
                                                     .stream = StreamHandle(stream),
                                                     .event = tally::client::EventHandle(event)});
  });
}

// Host functions run after the stream's preceding work and before its later work (CUDA Runtime
// API, cudaLaunchHostFunc). Until the server can call back into the client, the shim keeps that
// order by waiting for the stream and running the function on the calling thread: correct
// ordering, but the call blocks like a synchronisation.
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t function, void* data) {
  return Run(__func__, [&]() -> absl::Status {
    if (function == nullptr) return CudaError(cudaErrorInvalidValue, "null host function");
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    TALLY_RETURN_IF_ERROR(
        channel->Call(ipc::StreamSynchronizeRequest{.stream = StreamHandle(stream)}).status());
    function(data);
    return absl::OkStatus();
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
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    const absl::Status synced =
        channel->Call(ipc::StreamSynchronizeRequest{.stream = StreamHandle(stream)}).status();
    if (tally::client::ToCudaError(synced) == cudaErrorInvalidResourceHandle) return synced;
    callback(stream, tally::client::ToCudaError(synced), data);
    return absl::OkStatus();
  });
}

}  // extern "C"
