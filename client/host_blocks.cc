// Page-locked blocks of the host region and application memory registered with
// cudaHostRegister.
#include "client/host_blocks.h"

#include <sys/mman.h>

#include <iterator>

#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/copy.h"
#include "common/status.h"

namespace tally::client {
namespace {

constexpr size_t kPage = 4096;

size_t RoundUpToPage(size_t size) { return (size + kPage - 1) / kPage * kPage; }

}  // namespace

// Blocks are whole pages so that the server registers each on its own (registrations must not
// share a page). The allocator's bookkeeping lives in the region; only this process trusts it.
absl::StatusOr<ipc::BulkRef> HostBlocks::Carve(size_t size) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  std::lock_guard lock(mutex_);
  if (allocator_ == nullptr) {
    absl::StatusOr<std::span<std::byte>> region = channel->host_region();
    if (!region.ok()) {
      return CudaError(cudaErrorMemoryAllocation,
                       absl::StrFormat("no page-locked memory: %s", region.status().message()));
    }
    TALLY_ASSIGN_OR_RETURN(allocator_, ipc::BulkAllocator::Create(*region));
    region_base_ = reinterpret_cast<uintptr_t>(region->data());
  }
  absl::StatusOr<ipc::BulkRef> block = allocator_->Allocate(RoundUpToPage(size), kPage);
  if (!block.ok()) {
    return CudaError(cudaErrorMemoryAllocation,
                     absl::StrFormat("page-locked memory exhausted: %s", block.status().message()));
  }
  return block;
}

absl::StatusOr<void*> HostBlocks::Allocate(size_t size, HostBlockKind kind, unsigned flags) {
  TALLY_ASSIGN_OR_RETURN(const ipc::BulkRef block, Carve(size));
  const uintptr_t base = region_base_ + block.offset;
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  // Not under mutex_: other threads keep allocating and looking blocks up meanwhile.
  absl::Status registered =
      channel->Call(ipc::HostAllocRequest{.address = base, .size = block.size}).status();
  std::lock_guard lock(mutex_);
  if (!registered.ok()) {
    allocator_->Free(block);
    return registered;
  }
  blocks_[base] = HostBlock{base, size, kind, flags, NewBufferId()};
  // Kernels may use it: memsets and device-side copies accept it like device memory.
  DeviceRanges::Get().Add(base, size, RangeKind::kHostBlock);
  return reinterpret_cast<void*>(base);
}

absl::Status HostBlocks::Free(void* pointer, HostBlockKind kind) {
  const auto base = reinterpret_cast<uintptr_t>(pointer);
  size_t size = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(base);
    if (it == blocks_.end() || it->second.kind != kind) {
      return CudaError(cudaErrorInvalidValue, kind == HostBlockKind::kManaged
                                                  ? "not memory from cudaMallocManaged"
                                                  : "not memory from cudaMallocHost/cudaHostAlloc");
    }
    size = it->second.size;
    blocks_.erase(it);
  }
  DeviceRanges::Get().Remove(base);
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const absl::Status unregistered = channel->Call(ipc::HostFreeRequest{.address = base}).status();
  // Reused only once the server no longer has it registered; otherwise it is leaked, not reused.
  if (!unregistered.ok()) return unregistered;
  std::lock_guard lock(mutex_);
  ReturnPagesLocked(base, size);
  return absl::OkStatus();
}

void HostBlocks::ReturnPagesLocked(uintptr_t base, size_t size) {
  // The pages go back to the system (the region is a memfd: MADV_REMOVE punches a hole, for the
  // server's mapping too) before the allocator writes its free-list entry into the block.
  madvise(reinterpret_cast<void*>(base), RoundUpToPage(size), MADV_REMOVE);
  allocator_->Free({.offset = base - region_base_, .size = 0});
}

void HostBlocks::Reset() {
  std::lock_guard lock(mutex_);
  for (const auto& [base, block] : blocks_) {
    if (block.kind == HostBlockKind::kRegistered) continue;
    DeviceRanges::Get().Remove(base);
    ReturnPagesLocked(base, block.size);
  }
  blocks_.clear();
}

absl::Status HostBlocks::CheckNoOverlapLocked(uintptr_t base, size_t size) const {
  auto next = blocks_.lower_bound(base);
  const bool overlaps_next = next != blocks_.end() && next->first - base < size;
  const bool overlaps_previous =
      next != blocks_.begin() && base - std::prev(next)->first < std::prev(next)->second.size;
  if (!overlaps_next && !overlaps_previous) return absl::OkStatus();
  return CudaError(cudaErrorHostMemoryAlreadyRegistered,
                   "the range overlaps page-locked or registered memory");
}

// CUDA (cudaHostRegister) also maps registered memory for the device under unified addressing;
// here the device is in another process and cannot reach it, which cudaHostGetDevicePointer
// and cudaPointerGetAttributes report.
absl::Status HostBlocks::Register(void* pointer, size_t size, unsigned flags) {
  if (pointer == nullptr || size == 0) {
    return CudaError(cudaErrorInvalidValue, "cudaHostRegister of a null or empty range");
  }
  constexpr unsigned kKnown = cudaHostRegisterPortable | cudaHostRegisterMapped |
                              cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
  if ((flags & ~kKnown) != 0) {
    return CudaError(cudaErrorInvalidValue, "unknown cudaHostRegister flags");
  }
  if ((flags & cudaHostRegisterIoMemory) != 0) {
    return CudaError(cudaErrorNotSupported, "cudaHostRegisterIoMemory is not supported");
  }
  const auto base = reinterpret_cast<uintptr_t>(pointer);
  if (base + size < base) return CudaError(cudaErrorInvalidValue, "the range wraps around");
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  if (channel->InHostRegion(pointer)) {
    return CudaError(cudaErrorHostMemoryAlreadyRegistered, "the memory is page-locked already");
  }
  std::lock_guard lock(mutex_);
  TALLY_RETURN_IF_ERROR(CheckNoOverlapLocked(base, size));
  blocks_[base] = HostBlock{base, size, HostBlockKind::kRegistered, flags, NewBufferId()};
  return absl::OkStatus();
}

absl::Status HostBlocks::Unregister(void* pointer) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == blocks_.end() || it->second.kind != HostBlockKind::kRegistered) {
    return CudaError(cudaErrorHostMemoryNotRegistered,
                     "not the start of memory registered with cudaHostRegister");
  }
  blocks_.erase(it);
  return absl::OkStatus();
}

std::optional<HostBlock> HostBlocks::Find(const void* pointer) const {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  std::lock_guard lock(mutex_);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return std::nullopt;
  --it;
  const HostBlock& block = it->second;
  if (address - block.base >= block.size) return std::nullopt;
  return block;
}

}  // namespace tally::client
