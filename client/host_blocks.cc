// Page-locked blocks of the host region, and application memory registered with
// cudaHostRegister, moved into such blocks.
#include "client/host_blocks.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/copy.h"
#include "common/log.h"
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
  std::lock_guard registering(register_mutex_);
  std::lock_guard lock(mutex_);
  for (const auto& [base, block] : blocks_) {
    if (block.kind == HostBlockKind::kRegistered) {
      if (block.device != 0) DeviceRanges::Get().Remove(block.device);
      continue;
    }
    DeviceRanges::Get().Remove(base);
    ReturnPagesLocked(base, block.size);
  }
  for (const auto& [base, registration] : registrations_) UnmapRegistrationLocked(registration);
  blocks_.clear();
  registrations_.clear();
  aliases_.clear();
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

const char* UnmappedReason(Unmapped unmapped) {
  switch (unmapped) {
    case Unmapped::kNo:
      return "mapped";
    case Unmapped::kShared:
      return "it is shared memory (a MAP_SHARED mapping), which Tally cannot map for the device, "
             "whose memory lives in the server process";
    case Unmapped::kSharedPage:
      return "it shares a page with memory registered before, which Tally maps for the device "
             "page by page";
    case Unmapped::kStack:
      return "it is on the calling thread's stack, whose pages Tally cannot move while the "
             "thread runs on them";
    case Unmapped::kNoHostRegion:
      return "this process has no page-locked memory (the server's address for it is taken)";
  }
  return "unknown";
}

namespace {

// The mappings of [begin, end) (page-aligned), as /proc/self/maps lists them: one part per
// mapping, with its protection; `shared` when one of them is MAP_SHARED, `stack` when one holds
// `stack_address`. cudaErrorInvalidValue for a range that is not all mapped and readable.
absl::StatusOr<std::vector<std::pair<uintptr_t, uintptr_t>>> ReadMappings(
    uintptr_t begin, uintptr_t end, uintptr_t stack_address, std::vector<int>& prots, bool& shared,
    bool& stack) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<uintptr_t, uintptr_t>> parts;
  uintptr_t next = begin;
  for (std::string line; next < end && std::getline(maps, line);) {
    unsigned long low = 0, high = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &low, &high, perms) != 3) continue;
    if (high <= next) continue;
    if (low > next) break;  // a hole
    const uintptr_t part_end = std::min<uintptr_t>(high, end);
    parts.emplace_back(next, part_end);
    prots.push_back((perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                    (perms[2] == 'x' ? PROT_EXEC : 0));
    shared = shared || perms[3] == 's';
    stack = stack || (low <= stack_address && stack_address < high);
    if (perms[0] != 'r') break;  // unreadable memory cannot be copied (nor pinned)
    next = part_end;
  }
  if (next < end) {
    return CudaError(
        cudaErrorInvalidValue,
        absl::StrFormat("[0x%x, 0x%x) is not all mapped, readable memory", begin, end));
  }
  return parts;
}

// Addresses [begin, end).
struct AddressRange {
  uintptr_t begin = 0, end = 0;
};

// A copy AddressSanitizer does not check; volatile, so that the compiler does not make it a call
// of memcpy, which the sanitizer's runtime checks.
__attribute__((no_sanitize("address"))) void CopyUnchecked(std::byte* to, uintptr_t from,
                                                           uintptr_t from_end) {
  const auto* source = reinterpret_cast<const volatile std::byte*>(from);
  for (size_t i = 0; i < from_end - from; ++i) to[i] = source[i];
}

// Copies the pages holding a registered range to `to`, the range as any memory, the rest of its
// first and last page unchecked. That rest is not the application's to give CUDA but must move
// with the pages, which a block replaces whole: it holds whatever else the application keeps
// there (other objects, its allocator's bookkeeping, AddressSanitizer's poisoned redzones).
void CopyPages(void* to, AddressRange pages, AddressRange registered) {
  auto* const page_copy = static_cast<std::byte*>(to);
  CopyUnchecked(page_copy, pages.begin, registered.begin);
  std::memcpy(page_copy + (registered.begin - pages.begin),
              reinterpret_cast<const void*>(registered.begin), registered.end - registered.begin);
  CopyUnchecked(page_copy + (registered.end - pages.begin), registered.end, pages.end);
}

// Replaces the pages holding a registered range with private anonymous memory holding their
// current contents, each part with its protection: mremap moves the filled copy over the old
// mapping in one step.
void MakePrivate(AddressRange pages, AddressRange registered,
                 const std::vector<std::pair<uintptr_t, int>>& part_prots) {
  const uintptr_t begin = pages.begin, end = pages.end;
  const size_t length = end - begin;
  void* copy = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) {
    TALLY_LOG_ERROR(
        "tally: cannot give registered memory back ({}): it stays shared with the "
        "host region",
        std::strerror(errno));
    return;
  }
  CopyPages(copy, pages, registered);
  for (size_t i = 0; i < part_prots.size(); ++i) {
    const uintptr_t part_end = i + 1 < part_prots.size() ? part_prots[i + 1].first : end;
    mprotect(static_cast<char*>(copy) + (part_prots[i].first - begin),
             part_end - part_prots[i].first, part_prots[i].second);
  }
  if (mremap(copy, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(begin)) ==
      MAP_FAILED) {
    TALLY_LOG_ERROR("tally: cannot give registered memory back ({})", std::strerror(errno));
    munmap(copy, length);
  }
}

}  // namespace

Unmapped HostBlocks::WhyUnmappableLocked(const Registration& registration) const {
  for (const auto& [base, other] : registrations_) {
    if (other.region != 0 && other.page_begin < registration.page_end &&
        registration.page_begin < other.page_end) {
      return Unmapped::kSharedPage;
    }
  }
  return Unmapped::kNo;
}

// The pages' contents are copied into the block and the block is then mapped over them, so the
// application's pointer and the block's address name the same memory from then on. Another
// thread writing to these pages (outside the registered range, on its first or last page) during
// the call could lose that write: CUDA pins pages in place, Tally must move them.
absl::Status HostBlocks::MapRegistration(Registration& registration) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const size_t length = registration.page_end - registration.page_begin;
  TALLY_ASSIGN_OR_RETURN(const ipc::BulkRef block, Carve(length));
  const uintptr_t region = region_base_ + block.offset;
  CopyPages(reinterpret_cast<void*>(region), {registration.page_begin, registration.page_end},
            {registration.begin, registration.end});
  absl::Status mapped = absl::OkStatus();
  for (const Part& part : registration.parts) {
    mapped = channel->MapHostRegionAlias(reinterpret_cast<void*>(part.begin),
                                         region + (part.begin - registration.page_begin),
                                         part.end - part.begin, part.prot);
    if (!mapped.ok()) break;
  }
  if (mapped.ok()) {
    mapped = channel->Call(ipc::HostAllocRequest{.address = region, .size = block.size}).status();
  }
  registration.region = region;
  if (!mapped.ok()) {
    std::lock_guard lock(mutex_);
    UnmapRegistrationLocked(registration);
    registration.region = 0;
    return mapped;
  }
  return absl::OkStatus();
}

void HostBlocks::UnmapRegistrationLocked(const Registration& registration) {
  if (registration.region == 0) return;
  std::vector<std::pair<uintptr_t, int>> part_prots;
  for (const Part& part : registration.parts) part_prots.emplace_back(part.begin, part.prot);
  MakePrivate({registration.page_begin, registration.page_end},
              {registration.begin, registration.end}, part_prots);
  ReturnPagesLocked(registration.region, registration.page_end - registration.page_begin);
}

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
  if (base + size < base || base + size > UINTPTR_MAX - kPage) {
    return CudaError(cudaErrorInvalidValue, "the range wraps around");
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  if (channel->InHostRegion(pointer)) {
    return CudaError(cudaErrorHostMemoryAlreadyRegistered, "the memory is page-locked already");
  }
  std::lock_guard registering(register_mutex_);
  {
    std::lock_guard lock(mutex_);
    TALLY_RETURN_IF_ERROR(CheckNoOverlapLocked(base, size));
  }
  Registration registration;
  registration.begin = base;
  registration.end = base + size;
  registration.page_begin = base / kPage * kPage;
  registration.page_end = RoundUpToPage(base + size);
  std::vector<int> prots;
  bool shared = false, stack = false;
  TALLY_ASSIGN_OR_RETURN(
      const auto parts,
      ReadMappings(registration.page_begin, registration.page_end,
                   reinterpret_cast<uintptr_t>(&registration), prots, shared, stack));
  for (size_t i = 0; i < parts.size(); ++i) {
    registration.parts.push_back({parts[i].first, parts[i].second, prots[i]});
  }
  Unmapped unmapped = shared ? Unmapped::kShared : stack ? Unmapped::kStack : Unmapped::kNo;
  if (unmapped == Unmapped::kNo) {
    std::lock_guard lock(mutex_);
    unmapped = WhyUnmappableLocked(registration);
  }
  if (unmapped == Unmapped::kNo && !channel->host_region().ok()) unmapped = Unmapped::kNoHostRegion;
  if (unmapped == Unmapped::kNo) TALLY_RETURN_IF_ERROR(MapRegistration(registration));
  HostBlock block{base, size, HostBlockKind::kRegistered, flags, NewBufferId()};
  block.unmapped = unmapped;
  if (registration.region != 0) {
    block.device = registration.region + (base - registration.page_begin);
    // Kernels, memsets and device-side copies may use the device pointer.
    DeviceRanges::Get().Add(block.device, size, RangeKind::kHostBlock);
  }
  std::lock_guard lock(mutex_);
  if (block.device != 0) aliases_[block.device] = base;
  blocks_[base] = block;
  registrations_[base] = std::move(registration);
  return absl::OkStatus();
}

absl::Status HostBlocks::Unregister(void* pointer) {
  std::lock_guard registering(register_mutex_);
  const auto base = reinterpret_cast<uintptr_t>(pointer);
  HostBlock block;
  Registration registration;
  {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(base);
    if (it == blocks_.end() || it->second.kind != HostBlockKind::kRegistered) {
      return CudaError(cudaErrorHostMemoryNotRegistered,
                       "not the start of memory registered with cudaHostRegister");
    }
    block = it->second;
    blocks_.erase(it);
    aliases_.erase(block.device);
    auto found = registrations_.find(base);
    registration = std::move(found->second);
    registrations_.erase(found);
  }
  if (registration.region == 0) return absl::OkStatus();
  DeviceRanges::Get().Remove(block.device);
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  // The server unregisters the block once the client's queued work (which may use it) is done.
  const absl::Status unregistered =
      channel->Call(ipc::HostFreeRequest{.address = registration.region}).status();
  std::lock_guard lock(mutex_);
  if (!unregistered.ok()) {
    // The application keeps its memory; the block is leaked rather than reused while the
    // server may still have it registered.
    std::vector<std::pair<uintptr_t, int>> part_prots;
    for (const Part& part : registration.parts) part_prots.emplace_back(part.begin, part.prot);
    MakePrivate({registration.page_begin, registration.page_end},
                {registration.begin, registration.end}, part_prots);
    return unregistered;
  }
  UnmapRegistrationLocked(registration);
  return absl::OkStatus();
}

std::optional<HostBlock> HostBlocks::Find(const void* pointer) const {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  std::lock_guard lock(mutex_);
  const auto inside = [&](uintptr_t base) -> std::optional<HostBlock> {
    auto it = blocks_.upper_bound(base);
    if (it == blocks_.begin()) return std::nullopt;
    --it;
    const HostBlock& block = it->second;
    if (base - block.base >= block.size) return std::nullopt;
    return block;
  };
  if (auto block = inside(address)) return block;
  // A registration's device alias.
  auto alias = aliases_.upper_bound(address);
  if (alias == aliases_.begin()) return std::nullopt;
  --alias;
  auto block = inside(alias->second);
  if (!block || address - block->device >= block->size) return std::nullopt;
  return block;
}

}  // namespace tally::client
