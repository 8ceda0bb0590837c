// The sticky errors of tenants (cuda_abi/driver_extensions.h): a fault in a launch on a tenant's stream makes
// the tenant unusable, not the context, so that the other tenants of a shared context go on.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"

namespace tally::emu {

// Tenant ids are the server's (any non-zero number); 0 is "no tenant": such work faults its
// context, as in CUDA.
class TenantFaults {
 public:
  // Records `error` as `tenant`'s sticky error unless it has one already (the first fault wins,
  // as for a context's).
  void Record(uint64_t tenant, CUresult error);
  // The tenant's sticky error; CUDA_SUCCESS while it has none. One atomic load while no tenant
  // ever faulted.
  CUresult Error(uint64_t tenant) const;

 private:
  std::atomic<bool> any_{false};
  mutable std::mutex mu_;
  absl::flat_hash_map<uint64_t, CUresult> errors_;  // mu_; one entry per tenant that faulted
};

}  // namespace tally::emu
