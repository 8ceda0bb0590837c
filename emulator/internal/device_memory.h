// The emulated device's address space. Device allocations are carved out of one reserved host
// mapping, so a device pointer is directly usable as a host address (kernels dereference it
// without translation) while looking like a GPU address; pinned and registered host memory
// share the same table because with unified addressing their device pointer is the host pointer
// (CUDA driver API, "Unified Addressing"). Every access is checked against this table.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>

#include "absl/status/statusor.h"

namespace tally::emu {

// kDeviceHeap: memory a kernel got from device-side malloc (only device-side free releases it).
// kMapped: a cuMemMap mapping (internal/virtual_memory.h, which alone adds and removes them).
enum class AllocationKind : uint8_t {
  kDevice,
  kManaged,
  kHostPinned,
  kHostRegistered,
  kDeviceHeap,
  kMapped,
};

// What the device may do with an allocation (CUmemAccess_flags). Only mappings can have less than
// read-write (cuMemSetAccess).
enum class MemoryAccess : uint8_t { kNone, kRead, kReadWrite };

struct Allocation {
  uint64_t base = 0;
  uint64_t size = 0;  // as requested (accesses beyond it are out of bounds)
  AllocationKind kind = AllocationKind::kDevice;
  uint64_t owner = 0;      // id of the context that made it (freed with the context)
  unsigned flags = 0;      // cuMemHostAlloc / cuMemHostRegister flags
  uint64_t buffer_id = 0;  // unique over the process's lifetime (CU_POINTER_ATTRIBUTE_BUFFER_ID)
  // Whose it is (cuda_abi/driver_extensions.h; 0: nobody's, every kernel may touch it): a kernel launched on
  // a stream of another tenant may not.
  uint64_t tenant = 0;
  MemoryAccess access = MemoryAccess::kReadWrite;
  // For kMapped: the reservation the mapping lies in (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR/SIZE
  // name "the mappable address range", e.g. from cuMemAddressReserve); else the allocation.
  uint64_t range_base = 0;
  uint64_t range_size = 0;
};

class DeviceMemory {
 public:
  // Reserves `capacity` bytes of address space (pages are committed on first touch).
  static absl::StatusOr<std::unique_ptr<DeviceMemory>> Create(uint64_t capacity);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // kDevice, kManaged or kDeviceHeap memory from the arena, 512-byte aligned (the texture
  // alignment; cudaMalloc promises 256).
  absl::StatusOr<uint64_t> Allocate(uint64_t size, AllocationKind kind, uint64_t owner,
                                    uint64_t tenant = 0);
  // Page-aligned host memory that kernels may access (cuMemHostAlloc).
  absl::StatusOr<void*> AllocateHost(uint64_t size, unsigned flags, uint64_t owner);
  absl::Status RegisterHost(void* pointer, uint64_t size, unsigned flags, uint64_t owner);
  // Releases the allocation starting exactly at `base` if it is one of `kinds` (a bit set of
  // 1 << AllocationKind); `missing` is the CUresult for anything else.
  absl::Status Release(uint64_t base, unsigned kinds, CUresult missing);
  void ReleaseAllOwnedBy(uint64_t owner);
  // Gives the allocation starting exactly at `base` to `tenant` (0: to nobody);
  // CUDA_ERROR_INVALID_VALUE when no allocation starts there.
  absl::Status SetTenant(uint64_t base, uint64_t tenant);

  // Physical memory of cuMemCreate: counted against the capacity like arena memory
  // (OUT_OF_MEMORY when it does not fit), given back with Uncharge.
  absl::Status Charge(uint64_t bytes);
  void Uncharge(uint64_t bytes);
  // A kMapped allocation [base, base + size) inside the reservation [range_base, +range_size),
  // inaccessible and of no tenant; INVALID_VALUE when it overlaps a tracked allocation.
  absl::Status AddMapping(uint64_t base, uint64_t size, uint64_t range_base, uint64_t range_size);
  void RemoveMapping(uint64_t base);
  void SetMappingAccess(uint64_t base, MemoryAccess access);

  // The live allocation containing `address` (also a mapping without access).
  std::optional<Allocation> Find(uint64_t address) const;
  // OK when [address, address + size) lies inside one live allocation, or adjacent mappings of
  // one reservation, that the device may read (and write, for `write`); INVALID_VALUE otherwise.
  absl::Status CheckRange(uint64_t address, uint64_t size, bool write = false) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const;

 private:
  DeviceMemory(uint8_t* arena, uint64_t capacity);
  void ReleaseLocked(std::map<uint64_t, Allocation>::iterator it);
  void ReturnToArenaLocked(uint64_t offset, uint64_t size);

  uint8_t* const arena_;
  const uint64_t capacity_;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Allocation> allocations_;  // by base address
  std::map<uint64_t, uint64_t> free_ranges_;    // arena offset -> length
  uint64_t arena_used_ = 0;
  uint64_t physical_used_ = 0;  // cuMemCreate allocations
  uint64_t last_buffer_id_ = 0;
};

constexpr unsigned KindBit(AllocationKind kind) { return 1u << static_cast<unsigned>(kind); }

// Whether `access` allows a read, or a write too.
constexpr bool Permits(MemoryAccess access, bool write) {
  return access == MemoryAccess::kReadWrite || (access == MemoryAccess::kRead && !write);
}

}  // namespace tally::emu
