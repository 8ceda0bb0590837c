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

// Host functions run after the stream's preceding work and before its later work (CUDA Runtime
// API, cudaLaunchHostFunc): the server keeps that order and calls back into the shim's callback
// thread when the stream reaches the function (client/host_callbacks.cc). The call itself
// returns at once; a bad stream surfaces at the next synchronising call.
absl::Status LaunchHostCallback(cudaStream_t stream, ipc::HostCallbackKind kind, void* function,
                                void* data) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(channel->EnableHostCallbacks());
  return channel->Post(ipc::LaunchHostFuncRequest{
      .kind = static_cast<uint32_t>(kind),
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

}  // extern "C"
