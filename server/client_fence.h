// One client's fence (tally-server --isolation fenced|strict): its address partition, which
// holds all of its device memory, and the word its fenced kernels set when an access strays
// (ptx_transform's fence pass sends such an access to the partition's sink instead). A launch of
// a fenced kernel passes the ranges the client may touch: its partition, its host region (its
// page-locked blocks live there) and its module's variables.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "ptx_transform/transform.h"
#include "server/address_partition.h"
#include "server/backend/backend.h"
#include "server/fence_violation.h"
#include "server/module_registry.h"

namespace tally::server {

class ClientFence {
 public:
  // `claim` gives memory the fence maps to the client (the emulated GPU's tenants).
  static absl::StatusOr<std::unique_ptr<ClientFence>> Create(
      const DriverApi& api, CUdevice device, uint64_t capacity, std::span<std::byte> host_region,
      const AddressPartition::ClaimChunk& claim);

  AddressPartition& partition() { return *partition_; }
  // The fence parameter of a launch of one of `module`'s kernels.
  ptx::FenceParams ParamsFor(const SharedModule& module) const;
  const std::shared_ptr<const FenceViolation>& violation() const { return violation_; }

 private:
  ClientFence(std::unique_ptr<AddressPartition> partition, std::span<std::byte> host_region,
              std::shared_ptr<const FenceViolation> violation)
      : violation_(std::move(violation)),
        host_region_(host_region),
        partition_(std::move(partition)) {}

  // The partition goes first: its end waits for the kernels that may still set the word.
  std::shared_ptr<const FenceViolation> violation_;
  std::span<std::byte> host_region_;
  std::unique_ptr<AddressPartition> partition_;
};

}  // namespace tally::server
