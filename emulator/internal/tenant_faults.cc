#include "emulator/internal/tenant_faults.h"

namespace tally::emu {

void TenantFaults::Record(uint64_t tenant, CUresult error) {
  std::lock_guard lock(mu_);
  errors_.try_emplace(tenant, error);
  any_.store(true, std::memory_order_release);
}

CUresult TenantFaults::Error(uint64_t tenant) const {
  if (tenant == 0 || !any_.load(std::memory_order_acquire)) return CUDA_SUCCESS;
  std::lock_guard lock(mu_);
  const auto it = errors_.find(tenant);
  return it == errors_.end() ? CUDA_SUCCESS : it->second;
}

}  // namespace tally::emu
