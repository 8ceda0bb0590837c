#include "server/context_faults.h"

#include <string>

#include "absl/strings/str_join.h"
#include "common/log.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

// How long a client's call waits for the dispatch thread to attribute a fault it saw first.
// The dispatch thread attributes within one round; this only bounds a stuck one.
constexpr auto kAttributionWait = std::chrono::seconds(2);

}  // namespace

bool ContextFaults::Poisons(CUresult result) {
  // The errors cuda.h documents as leaving the context (or the process) unusable.
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

void ContextFaults::Observe(CUresult result) {
  if (!Poisons(result)) return;
  {
    std::lock_guard lock(mutex_);
    if (fault_ != CUDA_SUCCESS) return;
    fault_ = result;
    faulted_at_ = Clock::now();
    attributed_ = false;
    culprits_.clear();
    faulted_.store(true, std::memory_order_release);
  }
  TALLY_LOG_ERROR(
      "tally-server: the device context faulted ({}): it is shared by every client, so every "
      "client connected now loses it; new clients wait until it is reset",
      CuResultText(result));
  if (wake_) wake_();
}

CUresult ContextFaults::ErrorFor(ClientId client, uint64_t generation) {
  std::unique_lock lock(mutex_);
  if (fault_ == CUDA_SUCCESS || generation != generation_) return CUDA_SUCCESS;
  changed_.wait_for(lock, kAttributionWait, [&] { return attributed_; });
  return culprits_.contains(client) ? fault_ : CUDA_ERROR_DEVICE_UNAVAILABLE;
}

bool ContextFaults::Evicted(uint64_t generation, Clock::time_point now) const {
  if (!faulted()) return false;
  std::lock_guard lock(mutex_);
  return fault_ != CUDA_SUCCESS && generation == generation_ && now - faulted_at_ >= grace_;
}

std::optional<uint64_t> ContextFaults::Join(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_until(lock, deadline, [&] { return fault_ == CUDA_SUCCESS; })) {
    return std::nullopt;
  }
  ++sessions_;
  return generation_;
}

void ContextFaults::Leave(uint64_t generation) {
  bool due = false;
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
    --sessions_;
    due = sessions_ == 0 && fault_ != CUDA_SUCCESS;
  }
  if (due && wake_) wake_();
}

bool ContextFaults::AttributionPending() const {
  std::lock_guard lock(mutex_);
  return fault_ != CUDA_SUCCESS && !attributed_;
}

void ContextFaults::Attribute(const absl::flat_hash_set<ClientId>& culprits) {
  std::string names;
  {
    std::lock_guard lock(mutex_);
    culprits_ = culprits;
    attributed_ = true;
    for (ClientId client : culprits_) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", client.value());
    }
    TALLY_LOG_ERROR(
        "tally-server: the fault ({}) is attributed to the client(s) whose kernels were on the "
        "device: [{}]; they get that error, the other clients of the context "
        "CUDA_ERROR_DEVICE_UNAVAILABLE",
        CuResultText(fault_), names);
  }
  changed_.notify_all();
}

bool ContextFaults::ResetDue() const {
  std::lock_guard lock(mutex_);
  return fault_ != CUDA_SUCCESS && attributed_ && sessions_ == 0;
}

uint64_t ContextFaults::recovered() const {
  std::lock_guard lock(mutex_);
  return generation_ - 1;
}

void ContextFaults::Recovered() {
  {
    std::lock_guard lock(mutex_);
    ++generation_;
    fault_ = CUDA_SUCCESS;
    attributed_ = false;
    culprits_.clear();
    faulted_.store(false, std::memory_order_release);
  }
  TALLY_LOG_INFO("tally-server: the device context was reset after its fault; serving again");
  changed_.notify_all();
}

CUresult ContextFaultView::Answer(CUresult observed) const {
  if (faults == nullptr || !ContextFaults::Poisons(observed)) return observed;
  faults->Observe(observed);
  const CUresult sticky = faults->ErrorFor(client, generation);
  return sticky != CUDA_SUCCESS ? sticky : observed;
}

}  // namespace tally::server
