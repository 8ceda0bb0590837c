#include "server/fence_violation.h"

#include <atomic>

#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {

absl::StatusOr<std::shared_ptr<FenceViolation>> FenceViolation::Create(const DriverApi& api) {
  std::shared_ptr<FenceViolation> violation(new FenceViolation(api));
  void* word = nullptr;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuMemHostAlloc(&word, sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP),
              "cuMemHostAlloc (fence violation word)"));
  violation->word_ = static_cast<uint32_t*>(word);
  *violation->word_ = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuMemHostGetDevicePointer(&violation->device_address_, word, 0),
                                "cuMemHostGetDevicePointer (fence violation word)"));
  return violation;
}

FenceViolation::~FenceViolation() {
  if (word_ != nullptr) api_.cuMemFreeHost(word_);
}

bool FenceViolation::Set() const {
  return std::atomic_ref<uint32_t>(*word_).load(std::memory_order_relaxed) != 0;
}

}  // namespace tally::server
