// Stream-ordered memory pools of one client (cudaMemPool_t, CUDA Runtime API "Stream Ordered
// Memory Allocator"): the device's default pool, the pools the client created and the client's
// current pool. A pool is Tally's own, on top of the session's cuMemAlloc/cuMemFree: every block
// it holds, used or free, is in the session's allocation table, so it counts against the
// client's device-memory limit for as long as the pool holds it. Session thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/handle_table.h"

namespace tally::server {

// A block freed to a pool: reusable at once by later work on the stream that freed it, and by
// any stream once that stream has finished the work before the free (`ticket`).
struct FreedBlock {
  uint64_t base = 0;
  uint64_t size = 0;
  uint64_t stream = 0;  // the client's handle
  uint64_t ticket = 0;  // Session::Ticket at the free
};

class MemPool {
 public:
  // CUmemPool_attribute / cudaMemPoolAttr: both enums share their values.
  enum Attribute : uint32_t {
    kReuseFollowEventDependencies = 1,
    kReuseAllowOpportunistic = 2,
    kReuseAllowInternalDependencies = 3,
    kReleaseThreshold = 4,
    kReservedMemCurrent = 5,
    kReservedMemHigh = 6,
    kUsedMemCurrent = 7,
    kUsedMemHigh = 8,
  };
  absl::StatusOr<uint64_t> Get(uint32_t attribute) const;
  // Booleans are 0 or 1; the high watermarks may only be reset (to 0, which means "to now").
  absl::Status Set(uint32_t attribute, uint64_t value);

  // A free block of at least `size` bytes that work on `stream` may use now, taken out of the
  // free list and in use again; `finished(block)` says whether the work before its free is done.
  std::optional<FreedBlock> Reuse(uint64_t size, uint64_t stream,
                                  const std::function<bool(const FreedBlock&)>& finished);
  void AddUsed(uint64_t base, uint64_t size);
  // Moves a used block to the free list; its size, or nullopt when the pool does not use it.
  std::optional<uint64_t> Free(uint64_t base, uint64_t stream, uint64_t ticket);
  // Takes free blocks out of the pool until it holds at most `keep` bytes; returns their bases.
  std::vector<uint64_t> TrimTo(uint64_t keep);
  // TrimTo the release threshold.
  std::vector<uint64_t> TrimToThreshold() { return TrimTo(release_threshold_); }
  // Every block in use (they outlive a destroyed pool as plain allocations).
  std::vector<uint64_t> UsedBases() const;

 private:
  void NoteHighs();

  absl::flat_hash_map<uint64_t, uint64_t> used_;  // base -> size
  std::vector<FreedBlock> free_;                  // oldest first
  uint64_t used_bytes_ = 0;
  uint64_t reserved_bytes_ = 0;
  uint64_t used_high_ = 0;
  uint64_t reserved_high_ = 0;
  uint64_t release_threshold_ = 0;
  bool follow_event_dependencies_ = true;
  bool allow_opportunistic_ = true;
  bool allow_internal_dependencies_ = true;
};

class MemPools {
 public:
  explicit MemPools(uint8_t client_tag);

  uint64_t Create() { return pools_.Insert(MemPool{}); }
  // CUDA_ERROR_INVALID_HANDLE for an unknown handle; the default pool cannot be destroyed
  // (CUDA_ERROR_INVALID_VALUE). Returns the pool, whose used blocks are plain allocations now.
  absl::StatusOr<MemPool> Destroy(uint64_t handle);
  // CUDA_ERROR_INVALID_HANDLE unless `handle` is a live pool of the client's.
  absl::StatusOr<MemPool*> Find(uint64_t handle);
  uint64_t default_pool() const { return default_handle_; }
  uint64_t current() const { return current_; }
  absl::Status SetCurrent(uint64_t handle);
  // The pool whose block starts at `base`, and its handle; nullopt for other memory.
  std::optional<uint64_t> OwnerOf(uint64_t base) const;
  void SetOwner(uint64_t base, uint64_t handle) { owners_[base] = handle; }
  void ForgetOwner(uint64_t base) { owners_.erase(base); }
  // cudaDeviceReset: created pools go, the default pool is empty and current again (the blocks
  // themselves leave with the session's allocation table).
  void Reset();

 private:
  uint64_t default_handle_;
  MemPool default_pool_;
  uint64_t current_;
  HandleTable<MemPool> pools_;
  absl::flat_hash_map<uint64_t, uint64_t> owners_;  // block base -> pool handle
};

}  // namespace tally::server
