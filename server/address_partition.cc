#include "server/address_partition.h"

#include <algorithm>
#include <vector>

#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

CUmemAllocationProp DeviceMemory(CUdevice device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AddressPartition>> AddressPartition::Reserve(const DriverApi& api,
                                                                            CUdevice device,
                                                                            uint64_t capacity,
                                                                            ClaimChunk claim) {
  std::unique_ptr<AddressPartition> partition(new AddressPartition(api, device, std::move(claim)));
  const CUmemAllocationProp prop = DeviceMemory(device);
  size_t granularity = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(
      api.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
      "cuMemGetAllocationGranularity"));
  if (granularity == 0 || granularity % kAlignment != 0) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       "the device's allocation granularity is no multiple of 512 bytes");
  }
  partition->granularity_ = granularity;
  const uint64_t room = RoundUp(std::max<uint64_t>(capacity, 1), granularity) * 2;
  const uint64_t size = granularity + room;  // the sink, then the allocations' room
  CUdeviceptr base = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuMemAddressReserve(&base, size, granularity, 0, 0), "cuMemAddressReserve"));
  partition->base_ = base;
  partition->size_ = size;
  TALLY_RETURN_IF_ERROR(partition->MapChunk(0, granularity));
  partition->chunks_.at(0).users = 1;  // the sink is never unmapped before the partition goes
  partition->free_.emplace(granularity, room);
  return partition;
}

AddressPartition::~AddressPartition() {
  if (base_ == 0) return;
  if (!chunks_.empty()) api_.cuCtxSynchronize();
  for (const auto& [offset, chunk] : chunks_) UnmapChunk(offset, chunk);
  api_.cuMemAddressFree(base_, size_);
}

absl::Status AddressPartition::MapChunk(uint64_t offset, uint64_t size) {
  const CUmemAllocationProp prop = DeviceMemory(device_);
  CUmemGenericAllocationHandle handle = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(api_.cuMemCreate(&handle, size, &prop, 0), "cuMemCreate"));
  const CUdeviceptr address = base_ + offset;
  absl::Status mapped = CheckCu(api_.cuMemMap(address, size, 0, handle, 0), "cuMemMap");
  if (mapped.ok()) {
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    mapped = CheckCu(api_.cuMemSetAccess(address, size, &access, 1), "cuMemSetAccess");
    if (mapped.ok() && claim_) mapped = claim_(address);
    if (!mapped.ok()) api_.cuMemUnmap(address, size);
  }
  if (!mapped.ok()) {
    api_.cuMemRelease(handle);
    return mapped;
  }
  chunks_.emplace(offset, Chunk{size, handle, 0});
  return absl::OkStatus();
}

void AddressPartition::UnmapChunk(uint64_t offset, const Chunk& chunk) {
  api_.cuMemUnmap(base_ + offset, chunk.size);
  api_.cuMemRelease(chunk.handle);
}

uint64_t AddressPartition::Extent() const {
  const auto& [offset, chunk] = *chunks_.rbegin();  // the sink at least
  return offset + chunk.size;
}

absl::Status AddressPartition::Back(uint64_t offset, uint64_t size) {
  const uint64_t extent = Extent();
  const uint64_t end = RoundUp(offset + size, granularity_);
  if (end > extent) TALLY_RETURN_IF_ERROR(MapChunk(extent, end - extent));
  for (auto it = std::prev(chunks_.upper_bound(offset)); it != chunks_.end() && it->first < end;
       ++it) {
    ++it->second.users;
  }
  return absl::OkStatus();
}

absl::Status AddressPartition::Unback(uint64_t offset, uint64_t size) {
  const uint64_t end = offset + size;
  for (auto it = std::prev(chunks_.upper_bound(offset)); it != chunks_.end() && it->first < end;
       ++it) {
    --it->second.users;
  }
  if (chunks_.rbegin()->second.users != 0) return absl::OkStatus();
  // Kernels issued before the free may still run on the chunks, and cuMemUnmap is not
  // documented to wait for them: wait here, as cuMemFree does. mutex_ stays held, so no
  // allocation maps above the extent before these are unmapped.
  const absl::Status done = CheckCu(api_.cuCtxSynchronize(), "cuCtxSynchronize");
  while (chunks_.rbegin()->second.users == 0) {  // the sink always has one
    const auto top = std::prev(chunks_.end());
    UnmapChunk(top->first, top->second);
    chunks_.erase(top);
  }
  return done;
}

uint64_t AddressPartition::TakeFreeRange(uint64_t size) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const auto [offset, room] = *it;
    free_.erase(it);
    if (room > size) free_.emplace(offset + size, room - size);
    return offset;
  }
  return 0;
}

void AddressPartition::ReturnFreeRange(uint64_t offset, uint64_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += size;
      return;
    }
  }
  free_.emplace(offset, size);
}

absl::StatusOr<CUdeviceptr> AddressPartition::Allocate(uint64_t bytes) {
  const uint64_t size = RoundUp(std::max<uint64_t>(bytes, 1), kAlignment);
  std::lock_guard lock(mutex_);
  const uint64_t offset = size < bytes ? 0 : TakeFreeRange(size);
  if (offset == 0) {
    return ClientError(CUDA_ERROR_OUT_OF_MEMORY,
                       "the client's address partition has no free range of that size");
  }
  if (absl::Status backed = Back(offset, size); !backed.ok()) {
    ReturnFreeRange(offset, size);
    return backed;
  }
  allocations_.emplace(offset, size);
  return base_ + offset;
}

absl::Status AddressPartition::Free(CUdeviceptr base) {
  std::lock_guard lock(mutex_);
  const auto it = base < base_ ? allocations_.end() : allocations_.find(base - base_);
  if (it == allocations_.end()) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "no allocation of the partition starts there");
  }
  const auto [offset, size] = *it;
  allocations_.erase(it);
  ReturnFreeRange(offset, size);
  return Unback(offset, size);
}

uint64_t AddressPartition::extent() const {
  std::lock_guard lock(mutex_);
  return Extent();
}

}  // namespace tally::server
