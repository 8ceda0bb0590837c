// A client's address partition (tally-server --isolation fenced|strict): one virtual address
// reservation of the driver's virtual memory management API that holds every device allocation
// of the client, so that a fenced kernel (ptx_transform's fence pass) can be confined to it by
// one range check. Physical memory is created and mapped in chunks of whole granules as
// allocations need it.
//
// Layout: the first granule is the sink, where a fenced kernel's stray accesses land (mapped
// for the partition's whole life, never handed out); allocations follow, lowest address first.
// Everything below the extent (the end of the highest chunk) stays mapped, so that a fenced
// kernel, confined to [base, base + extent), never touches an unmapped address: a fault would
// end the context every client shares. A chunk that no allocation uses any more is unmapped
// once no chunk above it is mapped; until then the client's next allocations reuse it. The
// reservation is twice the device's memory so that fragmentation does not run it out of address
// space (address space is cheap; physical memory is what limits count).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace tally::server {

class AddressPartition {
 public:
  // Gives a newly mapped chunk to the client (the emulated GPU's tenants); may be empty.
  using ClaimChunk = std::function<absl::Status(CUdeviceptr base)>;

  // A partition with room for `capacity` bytes of allocations on `device`, whose context is
  // current on the calling thread.
  static absl::StatusOr<std::unique_ptr<AddressPartition>> Reserve(const DriverApi& api,
                                                                   CUdevice device,
                                                                   uint64_t capacity,
                                                                   ClaimChunk claim);
  AddressPartition(const AddressPartition&) = delete;
  AddressPartition& operator=(const AddressPartition&) = delete;
  // Waits for the device's work, then unmaps and releases everything and frees the reservation.
  ~AddressPartition();

  // `bytes` of device memory, aligned as cuMemAlloc's; CUDA_ERROR_OUT_OF_MEMORY when the
  // partition has no room or the device no memory.
  absl::StatusOr<CUdeviceptr> Allocate(uint64_t bytes);
  // Gives back an allocation made here. Chunks at the top that no allocation uses any more are
  // unmapped after the device's work is done (as cuMemFree waits for it: the client's kernels
  // may still use them). CUDA_ERROR_INVALID_VALUE for an address that starts no allocation.
  absl::Status Free(CUdeviceptr base);

  // The range a fenced kernel of the client may touch: [base, base + extent), the sink and
  // every allocation, all of it mapped.
  CUdeviceptr base() const { return base_; }
  uint64_t extent() const;
  uint64_t granularity() const { return granularity_; }

  // cuMemAlloc's alignment, which the fence's ranges are multiples of too.
  static constexpr uint64_t kAlignment = 512;

 private:
  struct Chunk {
    uint64_t size = 0;
    CUmemGenericAllocationHandle handle = 0;
    uint32_t users = 0;  // allocations that overlap it
  };

  AddressPartition(const DriverApi& api, CUdevice device, ClaimChunk claim)
      : api_(api), device_(device), claim_(std::move(claim)) {}
  // Maps a chunk of `size` bytes at partition offset `offset`.
  absl::Status MapChunk(uint64_t offset, uint64_t size);
  void UnmapChunk(uint64_t offset, const Chunk& chunk);
  // Maps what [offset, offset + size) needs above the extent and counts one more user of every
  // chunk it overlaps; on failure nothing is left changed.
  absl::Status Back(uint64_t offset, uint64_t size);
  // One user less of every chunk overlapping [offset, offset + size); then unmaps the chunks at
  // the top that have none (after waiting for the device's work).
  absl::Status Unback(uint64_t offset, uint64_t size);
  uint64_t Extent() const;                // mutex_ held
  uint64_t TakeFreeRange(uint64_t size);  // offset, or 0 when no free range is big enough
  void ReturnFreeRange(uint64_t offset, uint64_t size);

  const DriverApi& api_;
  CUdevice device_;
  ClaimChunk claim_;
  CUdeviceptr base_ = 0;
  uint64_t size_ = 0;  // of the reservation
  uint64_t granularity_ = 0;
  mutable std::mutex mutex_;           // Free comes from the threads that finish the client's calls
  std::map<uint64_t, uint64_t> free_;  // offset -> size, coalesced
  std::map<uint64_t, uint64_t> allocations_;  // offset -> size as asked
  std::map<uint64_t, Chunk> chunks_;  // offset -> chunk; they cover [0, extent) without gaps
};

}  // namespace tally::server
