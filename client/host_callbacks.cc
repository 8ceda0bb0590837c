// The shim's callback thread: the server sends RunHostCallback on the callback ring when a
// stream reaches a host function (cudaLaunchHostFunc, cudaStreamAddCallback); this thread runs
// the application's function and answers HostCallbackDone, after which the stream goes on. One
// thread runs them all, in the order the server asks: CUDA allows host functions of different
// streams to be serialised (CUDA Runtime API, cudaLaunchHostFunc).
#include <cuda_runtime_api.h>

#include <system_error>
#include <thread>

#include "client/channel.h"
#include "common/log.h"

namespace tally::client {

absl::Status Channel::EnableHostCallbacks() {
  std::call_once(host_callbacks_started_, [this] {
    try {
      std::thread(&Channel::ServeHostCallbacks, this).detach();  // the channel is never destroyed
    } catch (const std::system_error& error) {
      host_callbacks_status_ = CudaError(
          cudaErrorLaunchFailure, std::string("cannot start the host function thread: ") +
                                      error.what());
    }
  });
  return host_callbacks_status_;
}

void Channel::ServeHostCallbacks() {
  ipc::WaitOptions wait = connection_.MakeWaitOptions(absl::InfiniteDuration());
  // An idle application should not wake this thread often just to see the server is alive.
  wait.liveness_interval = absl::Milliseconds(100);
  ipc::RingConsumer& ring = connection_.callbacks();
  while (true) {
    absl::StatusOr<std::span<const std::byte>> record = ring.Peek(wait);
    if (!record.ok()) return;  // the server is gone: the application's calls report it
    absl::StatusOr<ipc::ReceivedMessage> message = ipc::ParseMessage(*record);
    absl::StatusOr<ipc::Decoded<ipc::RunHostCallback>> call =
        message.ok() ? ipc::Decode<ipc::RunHostCallback>(*message) : message.status();
    if (!call.ok() || !ring.Release().ok()) {
      TALLY_LOG_ERROR("tally: host functions stop: bad request from the server: {}",
                      call.status().ToString());
      return;
    }
    const ipc::RunHostCallback run = call->fields;
    if (static_cast<ipc::HostCallbackKind>(run.kind) == ipc::HostCallbackKind::kHostFunc) {
      reinterpret_cast<cudaHostFn_t>(run.function)(reinterpret_cast<void*>(run.data));
    } else {
      reinterpret_cast<cudaStreamCallback_t>(run.function)(
          reinterpret_cast<cudaStream_t>(run.app_stream),
          FromDriverResult(run.status), reinterpret_cast<void*>(run.data));
    }
    if (!Post(ipc::HostCallbackDoneRequest{.reserved = 0, .gate = run.gate}).ok()) return;
  }
}

}  // namespace tally::client
