#include "emulator/internal/device_heap.h"

#include <optional>

namespace tally::emu {
namespace {

// What a block costs the heap: the arena hands out 512-byte granules.
uint64_t Charge(uint64_t size) { return (size + 511) / 512 * 512; }

}  // namespace

uint64_t DeviceHeap::Malloc(uint64_t size, uint64_t tenant) {
  if (size == 0 || size > capacity_.load(std::memory_order_relaxed)) return 0;
  const uint64_t charge = Charge(size);
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + charge > capacity_.load(std::memory_order_relaxed)) return 0;
  } while (!used_.compare_exchange_weak(used, used + charge, std::memory_order_relaxed));
  absl::StatusOr<uint64_t> address = memory_.Allocate(size, AllocationKind::kDeviceHeap, owner_, tenant);
  if (!address.ok()) {
    used_.fetch_sub(charge, std::memory_order_relaxed);
    return 0;
  }
  return *address;
}

bool DeviceHeap::Free(uint64_t address, uint64_t tenant) {
  if (address == 0) return true;
  std::optional<Allocation> allocation = memory_.Find(address);
  if (!allocation || allocation->base != address || allocation->owner != owner_ ||
      allocation->kind != AllocationKind::kDeviceHeap || allocation->tenant != tenant) {
    return false;
  }
  if (!memory_.Release(address, KindBit(AllocationKind::kDeviceHeap), CUDA_ERROR_INVALID_VALUE)
           .ok()) {
    return false;  // freed concurrently by another thread
  }
  used_.fetch_sub(Charge(allocation->size), std::memory_order_relaxed);
  return true;
}

}  // namespace tally::emu
