// The driver's virtual memory management (CUDA driver API, "Virtual Memory Management"): address
// reservations, physical allocations behind handles, mappings and their access flags.
//
// A reservation is a PROT_NONE host mapping, so its addresses are device addresses that are also
// host addresses, like the arena's. A physical allocation is a memfd of its size, charged against
// the device memory; cuMemMap maps (part of) it MAP_SHARED|MAP_FIXED over the reservation, so one
// allocation mapped at several addresses is real aliasing. Each mapping is an allocation of kind
// kMapped in DeviceMemory's table, which checks every copy, memset and kernel access against its
// access flags (none until cuMemSetAccess grants some); the host mapping itself stays read-write
// while mapped, so that no access checked earlier can crash the process.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "emulator/internal/device_memory.h"

namespace tally::emu {

class VirtualMemory {
 public:
  // CU_MEM_ALLOC_GRANULARITY_MINIMUM and _RECOMMENDED, as on NVIDIA's GPUs (2 MiB pages).
  static constexpr uint64_t kGranularity = uint64_t{2} << 20;

  explicit VirtualMemory(DeviceMemory& memory) : memory_(memory) {}
  ~VirtualMemory();
  VirtualMemory(const VirtualMemory&) = delete;
  VirtualMemory& operator=(const VirtualMemory&) = delete;

  // cuMemAddressReserve: `size` and a non-zero `hint` multiples of the host page size, `alignment`
  // 0 or a power of two (at least kGranularity is used, so that the start can be mapped). The
  // hint is honoured when that range is free and aligned, else ignored.
  absl::StatusOr<uint64_t> Reserve(uint64_t size, uint64_t alignment, uint64_t hint);
  // cuMemAddressFree: exactly a reservation, none of which may still be mapped.
  absl::Status Free(uint64_t base, uint64_t size);

  // cuMemCreate of `size` bytes (a non-zero multiple of kGranularity): a new handle.
  absl::StatusOr<CUmemGenericAllocationHandle> Create(uint64_t size);
  // cuMemRelease: drops one reference to the handle; the memory lives on while mapped.
  absl::Status Release(CUmemGenericAllocationHandle handle);
  // cuMemRetainAllocationHandle: the handle mapped at `address` (anywhere in a mapping), with one
  // more reference (a released handle comes back with the same value).
  absl::StatusOr<CUmemGenericAllocationHandle> Retain(uint64_t address);
  // Size of the allocation behind a live handle.
  absl::StatusOr<uint64_t> AllocationSize(CUmemGenericAllocationHandle handle) const;

  // cuMemMap: [base, base + size) inside one reservation and not mapped yet, `offset` and `size`
  // granule multiples with offset + size inside the allocation. The mapping is inaccessible.
  absl::Status Map(uint64_t base, uint64_t size, uint64_t offset,
                   CUmemGenericAllocationHandle handle);
  // cuMemUnmap: exactly one earlier mapping. The caller synchronised the device first.
  absl::Status Unmap(uint64_t base, uint64_t size);
  // cuMemSetAccess for the device: [base, base + size) must consist of whole mappings. True in
  // *reduced when some mapping loses access (the caller then waits for outstanding work first:
  // SetAccess only validates when `apply` is false).
  absl::Status SetAccess(uint64_t base, uint64_t size, MemoryAccess access, bool apply,
                         bool* reduced);
  // cuMemGetAccess: the device's access to the mapping containing `address`.
  absl::StatusOr<MemoryAccess> GetAccess(uint64_t address) const;

 private:
  struct Physical;
  struct Mapping {
    uint64_t size = 0;
    uint64_t handle = 0;
    std::shared_ptr<Physical> physical;
  };
  struct Reservation {
    uint64_t size = 0;
  };
  struct HandleEntry {
    std::shared_ptr<Physical> physical;
    uint64_t references = 0;
  };

  DeviceMemory& memory_;
  mutable std::mutex mu_;
  std::map<uint64_t, Reservation> reservations_;  // by base address
  std::map<uint64_t, Mapping> mappings_;          // by base address
  absl::flat_hash_map<uint64_t, HandleEntry> handles_;
  uint64_t last_serial_ = 0;
  uint64_t next_hint_ = 0;  // where the next reservation without a hint is tried
};

}  // namespace tally::emu
