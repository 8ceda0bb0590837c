// Interval lookups over a client's allocations, written so that no address arithmetic a client
// controls can overflow.
#include "server/allocation_table.h"

#include <cuda.h>

#include <iterator>

#include "absl/strings/str_format.h"
#include "server/cuda_result.h"

namespace tally::server {

void AllocationTable::Insert(uint64_t base, uint64_t size) {
  auto [it, inserted] = allocations_.try_emplace(base, size);
  if (!inserted) {  // the driver reused an address we still held: keep the totals right
    total_bytes_ -= it->second;
    it->second = size;
  }
  total_bytes_ += size;
  count_ = allocations_.size();
}

std::vector<uint64_t> AllocationTable::TakeAll() {
  std::vector<uint64_t> bases;
  bases.reserve(allocations_.size());
  for (const auto& [base, size] : allocations_) bases.push_back(base);
  allocations_.clear();
  count_ = 0;
  total_bytes_ = 0;
  return bases;
}

absl::StatusOr<uint64_t> AllocationTable::Remove(uint64_t base) {
  auto it = allocations_.find(base);
  if (it == allocations_.end()) {
    return ClientError(
        CUDA_ERROR_INVALID_VALUE,
        absl::StrFormat("0x%x is not the start of an allocation of this client", base));
  }
  const uint64_t size = it->second;
  total_bytes_ -= size;
  allocations_.erase(it);
  count_ = allocations_.size();
  return size;
}

absl::Status AllocationTable::CheckRange(uint64_t address, uint64_t size) const {
  auto it = allocations_.upper_bound(address);
  if (it != allocations_.begin()) {
    --it;
    const uint64_t offset = address - it->first;  // address >= base here
    if (offset <= it->second && size <= it->second - offset) return absl::OkStatus();
  }
  return ClientError(
      CUDA_ERROR_INVALID_VALUE,
      absl::StrFormat("[0x%x, +%d) is not inside an allocation of this client", address, size));
}

bool AllocationTable::Overlaps(uint64_t base, uint64_t size) const {
  auto next = allocations_.lower_bound(base);
  if (next != allocations_.end() && next->first - base < size) return true;
  if (next == allocations_.begin()) return false;
  const auto& [before, before_size] = *std::prev(next);
  return base - before < before_size;
}

}  // namespace tally::server
