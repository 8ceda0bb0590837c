// The round trip of a host function: server callback thread -> client -> session thread.
#include "server/host_callbacks.h"

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/message.h"
#include "server/cuda_result.h"

namespace tally::server {

// What the backend hands back to our host function; freed by it.
struct HostCallbacks::Call {
  std::shared_ptr<HostCallbacks> owner;
  ipc::RunHostCallback message;
};

void HostCallbacks::Attach(ipc::RingProducer* ring, ipc::WaitOptions wait) {
  std::lock_guard lock(ring_mutex_);
  ring_ = ring;
  wait_ = std::move(wait);
}

absl::StatusOr<Command> HostCallbacks::MakeCommand(const DriverApi& api, CUstream stream,
                                                   const ipc::LaunchHostFuncRequest& request) {
  {
    std::lock_guard lock(ring_mutex_);
    if (ring_ == nullptr) {
      return ClientError(CUDA_ERROR_NOT_SUPPORTED, "this session cannot call back its client");
    }
  }
  const auto kind = static_cast<ipc::HostCallbackKind>(request.kind);
  if (kind != ipc::HostCallbackKind::kHostFunc && kind != ipc::HostCallbackKind::kStreamCallback) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("unknown host function kind %d", request.kind));
  }
  ipc::RunHostCallback message{};
  message.kind = request.kind;
  message.app_stream = request.app_stream;
  message.function = request.function;
  message.data = request.data;
  // Owned by the command until it is issued, then by the backend until our function runs: a
  // command discarded with its client frees it.
  auto call = std::make_shared<std::unique_ptr<Call>>(
      std::make_unique<Call>(Call{shared_from_this(), message}));
  return Command([&api, stream, kind, call]() -> CUresult {
    Call* raw = call->release();
    const CUresult result = kind == ipc::HostCallbackKind::kHostFunc
                                ? api.cuLaunchHostFunc(stream, &RunHostFunc, raw)
                                : api.cuStreamAddCallback(stream, &RunStreamCallback, raw, 0);
    if (result != CUDA_SUCCESS) delete raw;
    return result;
  });
}

void CUDA_CB HostCallbacks::RunHostFunc(void* call) {
  std::unique_ptr<Call> owned(static_cast<Call*>(call));
  owned->owner->Run(owned->message);
}

void CUDA_CB HostCallbacks::RunStreamCallback(CUstream, CUresult status, void* call) {
  std::unique_ptr<Call> owned(static_cast<Call*>(call));
  owned->message.status = status;
  owned->owner->Run(owned->message);
}

void HostCallbacks::Run(ipc::RunHostCallback message) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    message.gate = next_gate_++;
    // Before sending: the answer may come back before we wait for it.
    waiting_.insert(message.gate);
  }
  absl::Status sent = absl::UnavailableError("the client is gone");
  {
    std::lock_guard lock(ring_mutex_);
    if (ring_ != nullptr) sent = ipc::PostMessage(*ring_, 0, ipc::kFlagOneWay, message, wait_);
  }
  std::unique_lock lock(mutex_);
  if (!sent.ok()) {
    TALLY_LOG_DEBUG("host function not sent to the client: {}", sent.ToString());
    waiting_.erase(message.gate);
    return;
  }
  completed_.wait(lock, [&] { return closed_ || !waiting_.contains(message.gate); });
}

absl::Status HostCallbacks::Complete(uint64_t gate) {
  {
    std::lock_guard lock(mutex_);
    if (waiting_.erase(gate) == 0) {
      return ClientError(CUDA_ERROR_INVALID_VALUE,
                         absl::StrFormat("no host function waits for gate %d", gate));
    }
  }
  completed_.notify_all();
  return absl::OkStatus();
}

bool HostCallbacks::Waiting() {
  std::lock_guard lock(mutex_);
  return !waiting_.empty();
}

void HostCallbacks::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    waiting_.clear();
  }
  completed_.notify_all();
  std::lock_guard lock(ring_mutex_);  // after a send in progress, none follows
  ring_ = nullptr;
}

}  // namespace tally::server
