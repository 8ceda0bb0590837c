// Stream-ordered memory pools: reuse, trimming and attributes (mem_pools.h).
#include "server/mem_pools.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

constexpr uint16_t kPoolCookie = 5;

absl::Status BadAttribute(uint32_t attribute, const char* what) {
  return ClientError(CUDA_ERROR_INVALID_VALUE,
                     absl::StrFormat("memory pool attribute %d %s", attribute, what));
}

}  // namespace

absl::StatusOr<uint64_t> MemPool::Get(uint32_t attribute) const {
  switch (attribute) {
    case kReuseFollowEventDependencies:
      return follow_event_dependencies_;
    case kReuseAllowOpportunistic:
      return allow_opportunistic_;
    case kReuseAllowInternalDependencies:
      return allow_internal_dependencies_;
    case kReleaseThreshold:
      return release_threshold_;
    case kReservedMemCurrent:
      return reserved_bytes_;
    case kReservedMemHigh:
      return reserved_high_;
    case kUsedMemCurrent:
      return used_bytes_;
    case kUsedMemHigh:
      return used_high_;
  }
  return BadAttribute(attribute, "is unknown");
}

absl::Status MemPool::Set(uint32_t attribute, uint64_t value) {
  switch (attribute) {
    case kReuseFollowEventDependencies:
      follow_event_dependencies_ = value != 0;
      return absl::OkStatus();
    case kReuseAllowOpportunistic:
      allow_opportunistic_ = value != 0;
      return absl::OkStatus();
    case kReuseAllowInternalDependencies:
      allow_internal_dependencies_ = value != 0;
      return absl::OkStatus();
    case kReleaseThreshold:
      release_threshold_ = value;
      return absl::OkStatus();
    case kReservedMemHigh:
    case kUsedMemHigh:
      // "It is illegal to set this attribute to a non-zero value" (CUDA Driver API,
      // CUmemPool_attribute); 0 resets the watermark to the current value.
      if (value != 0) return BadAttribute(attribute, "may only be reset to 0");
      (attribute == kUsedMemHigh ? used_high_ : reserved_high_) =
          attribute == kUsedMemHigh ? used_bytes_ : reserved_bytes_;
      return absl::OkStatus();
  }
  return BadAttribute(attribute, "cannot be set");
}

// Reuse across streams is the opportunistic kind: the freeing stream has passed the free. Event
// and internal dependencies are not inserted (they are allowed, never required).
std::optional<FreedBlock> MemPool::Reuse(uint64_t size, uint64_t stream,
                                         const std::function<bool(const FreedBlock&)>& finished) {
  const auto usable = [&](const FreedBlock& block) {
    return block.size >= size &&
           (block.stream == stream || (allow_opportunistic_ && finished(block)));
  };
  const auto it = std::find_if(free_.begin(), free_.end(), usable);
  if (it == free_.end()) return std::nullopt;
  const FreedBlock block = *it;
  free_.erase(it);
  used_.emplace(block.base, block.size);
  used_bytes_ += block.size;
  NoteHighs();
  return block;
}

void MemPool::AddUsed(uint64_t base, uint64_t size) {
  used_.emplace(base, size);
  used_bytes_ += size;
  reserved_bytes_ += size;
  NoteHighs();
}

std::optional<uint64_t> MemPool::Free(uint64_t base, uint64_t stream, uint64_t ticket) {
  const auto it = used_.find(base);
  if (it == used_.end()) return std::nullopt;
  const uint64_t size = it->second;
  used_.erase(it);
  used_bytes_ -= size;
  free_.push_back({base, size, stream, ticket});
  return size;
}

std::vector<uint64_t> MemPool::TrimTo(uint64_t keep) {
  std::vector<uint64_t> released;
  while (reserved_bytes_ > keep && !free_.empty()) {
    reserved_bytes_ -= free_.front().size;
    released.push_back(free_.front().base);
    free_.erase(free_.begin());
  }
  return released;
}

std::vector<uint64_t> MemPool::UsedBases() const {
  std::vector<uint64_t> bases;
  for (const auto& [base, size] : used_) bases.push_back(base);
  return bases;
}

void MemPool::NoteHighs() {
  used_high_ = std::max(used_high_, used_bytes_);
  reserved_high_ = std::max(reserved_high_, reserved_bytes_);
}

// The default pool's handle is serial 0 of the pool cookie, which HandleTable never mints.
MemPools::MemPools(uint8_t client_tag)
    : default_handle_((uint64_t{kPoolCookie} << 48) | (uint64_t{client_tag} << 40)),
      current_(default_handle_),
      pools_(kPoolCookie, client_tag, "memory pool") {}

absl::StatusOr<MemPool> MemPools::Destroy(uint64_t handle) {
  if (handle == default_handle_) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "the default memory pool cannot be destroyed");
  }
  TALLY_ASSIGN_OR_RETURN(MemPool pool, pools_.Remove(handle));
  for (const uint64_t base : pool.UsedBases()) owners_.erase(base);
  if (current_ == handle) current_ = default_handle_;
  return pool;
}

absl::StatusOr<MemPool*> MemPools::Find(uint64_t handle) {
  if (handle == default_handle_) return &default_pool_;
  return pools_.Find(handle);
}

absl::Status MemPools::SetCurrent(uint64_t handle) {
  TALLY_RETURN_IF_ERROR(Find(handle).status());
  current_ = handle;
  return absl::OkStatus();
}

std::optional<uint64_t> MemPools::OwnerOf(uint64_t base) const {
  const auto it = owners_.find(base);
  if (it == owners_.end()) return std::nullopt;
  return it->second;
}

void MemPools::Reset() {
  pools_.Clear([](MemPool&) {});
  default_pool_ = MemPool{};
  current_ = default_handle_;
  owners_.clear();
}

}  // namespace tally::server
