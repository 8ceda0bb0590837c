// One client's device allocations, for checking every pointer range the client sends: a copy,
// memset or free is only issued when it lies inside memory that client allocated.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tally::server {

// Used by one thread (the client's session thread); only count() and total_bytes() may be read
// from others (tally-ctl status), which is why they are kept in atomics.
class AllocationTable {
 public:
  void Insert(uint64_t base, uint64_t size);
  // CUDA_ERROR_INVALID_VALUE unless `base` starts a live allocation; returns its size.
  absl::StatusOr<uint64_t> Remove(uint64_t base);
  // Empties the table; returns the bases it held.
  std::vector<uint64_t> TakeAll();
  // CUDA_ERROR_INVALID_VALUE unless [address, address + size) lies within one allocation.
  absl::Status CheckRange(uint64_t address, uint64_t size) const;
  // Whether [base, base + size) shares a byte with an allocation; `size` > 0.
  bool Overlaps(uint64_t base, uint64_t size) const;

  size_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t total_bytes() const { return total_bytes_.load(std::memory_order_relaxed); }

 private:
  std::map<uint64_t, uint64_t> allocations_;  // base -> size
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> total_bytes_{0};
};

}  // namespace tally::server
