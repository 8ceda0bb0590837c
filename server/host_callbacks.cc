// Gate words, and the client's side of a host function's round trip.
#include "server/host_callbacks.h"

#include <atomic>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/message.h"
#include "server/cuda_result.h"

namespace tally::server {

bool StreamGate::Closed(const uint32_t* word, uint32_t generation) {
  if (word == nullptr) return false;
  const uint32_t opened =
      std::atomic_ref<const uint32_t>(*word).load(std::memory_order_acquire);
  return static_cast<int32_t>(opened - generation) < 0;  // cyclic, as CU_STREAM_WAIT_VALUE_GEQ
}

void Gate::Open() const {
  // Release: the function's effects on host memory are visible to what the stream does next.
  std::atomic_ref<uint32_t>(*word).store(generation, std::memory_order_release);
}

HostCallbacks::~HostCallbacks() {
  for (const Page& page : pages_) api_.cuMemFreeHost(page.host);
}

void HostCallbacks::Attach(ipc::RingProducer* ring, ipc::WaitOptions wait) {
  std::lock_guard lock(mutex_);
  ring_ = ring;
  wait_ = std::move(wait);
  // The dispatch thread must never wait for the client: a full ring is tried again later.
  wait_.timeout = absl::ZeroDuration();
  wait_.spin_iterations = 0;
}

absl::StatusOr<int> HostCallbacks::NewSlot() {
  if (static_cast<size_t>(slots_) == pages_.size() * kWordsPerPage) {
    Page page;
    void* host = nullptr;
    TALLY_RETURN_IF_ERROR(CheckCu(
        api_.cuMemHostAlloc(&host, kWordsPerPage * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP),
        "cuMemHostAlloc (host function gates)"));
    page.host = static_cast<uint32_t*>(host);
    const CUresult mapped = api_.cuMemHostGetDevicePointer(&page.device, host, 0);
    if (mapped != CUDA_SUCCESS) {
      api_.cuMemFreeHost(host);
      return CheckCu(mapped, "cuMemHostGetDevicePointer (host function gates)");
    }
    for (size_t i = 0; i < kWordsPerPage; ++i) page.host[i] = 0;
    pages_.push_back(page);
  }
  return slots_++;
}

absl::StatusOr<HostFunction> HostCallbacks::Prepare(CUstream stream, StreamGate& gate,
                                                    const ipc::LaunchHostFuncRequest& request) {
  const auto kind = static_cast<ipc::HostCallbackKind>(request.kind);
  if (kind != ipc::HostCallbackKind::kHostFunc && kind != ipc::HostCallbackKind::kStreamCallback) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("unknown host function kind %d", request.kind));
  }
  std::lock_guard lock(mutex_);
  if (ring_ == nullptr) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED, "this session cannot call back its client");
  }
  if (gate.slot < 0) {
    TALLY_ASSIGN_OR_RETURN(gate.slot, NewSlot());
    gate.word = pages_[gate.slot / kWordsPerPage].host + gate.slot % kWordsPerPage;
  }
  const Page& page = pages_[gate.slot / kWordsPerPage];
  const size_t index = gate.slot % kWordsPerPage;
  HostFunction function;
  function.stream = stream;
  function.gate = {page.host + index, page.device + index * sizeof(uint32_t), ++gate.generation};
  function.message.kind = request.kind;
  function.message.app_stream = request.app_stream;
  function.message.function = request.function;
  function.message.data = request.data;
  function.callbacks = shared_from_this();
  return function;
}

absl::Status HostCallbacks::TrySend(const HostFunction& function, CUresult status) {
  std::lock_guard lock(mutex_);
  if (closed_ || ring_ == nullptr) {
    function.gate.Open();
    return absl::UnavailableError("the client is gone");
  }
  ipc::RunHostCallback message = function.message;
  message.status = status;
  message.gate = next_gate_;
  const absl::Status sent = ipc::PostMessage(*ring_, 0, ipc::kFlagOneWay, message, wait_);
  if (absl::IsDeadlineExceeded(sent)) return absl::ResourceExhaustedError("callback ring full");
  if (!sent.ok()) {
    function.gate.Open();
    return absl::UnavailableError(sent.message());
  }
  sent_.emplace(next_gate_++, function.gate);
  return absl::OkStatus();
}

absl::Status HostCallbacks::Complete(uint64_t gate) {
  std::lock_guard lock(mutex_);
  auto it = sent_.find(gate);
  if (it == sent_.end()) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("no host function waits for gate %d", gate));
  }
  it->second.Open();
  sent_.erase(it);
  return absl::OkStatus();
}

bool HostCallbacks::Waiting() {
  std::lock_guard lock(mutex_);
  return !sent_.empty();
}

void HostCallbacks::Close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  ring_ = nullptr;
  for (const auto& [id, gate] : sent_) gate.Open();
  sent_.clear();
}

}  // namespace tally::server
