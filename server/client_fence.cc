#include "server/client_fence.h"

#include "common/status.h"

namespace tally::server {

absl::StatusOr<std::unique_ptr<ClientFence>> ClientFence::Create(
    const DriverApi& api, CUdevice device, uint64_t capacity, std::span<std::byte> host_region,
    const AddressPartition::ClaimChunk& claim) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<AddressPartition> partition,
                         AddressPartition::Reserve(api, device, capacity, claim));
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<FenceViolation> violation, FenceViolation::Create(api));
  if (claim) TALLY_RETURN_IF_ERROR(claim(violation->device_address()));
  return std::unique_ptr<ClientFence>(
      new ClientFence(std::move(partition), host_region, std::move(violation)));
}

ptx::FenceParams ClientFence::ParamsFor(const SharedModule& module) const {
  ptx::FenceParams params = {};
  params.base[0] = partition_->base();
  params.size[0] = partition_->extent();
  // The host region is mmap'd, so page-aligned and a whole number of pages: multiples of 256
  // as the fence needs.
  params.base[1] = reinterpret_cast<uint64_t>(host_region_.data());
  params.size[1] = host_region_.size();
  const ModuleVariableRange variables = module.variable_range();
  params.base[2] = variables.base;
  params.size[2] = variables.size;
  params.violation_flag = violation_->device_address();
  return params;
}

}  // namespace tally::server
