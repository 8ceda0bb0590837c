// Arena allocation (first fit with coalescing) and the interval table of live allocations.
#include "emulator/internal/device_memory.h"

#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/status.h"
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/interval_map.h"

namespace tally::emu {
namespace {

// cudaMalloc promises 256-byte alignment (CUDA C++ Programming Guide, "Device Memory
// Accesses"); GPUs hand out at least 512, which is also CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, so
// allocations can back linear textures directly.
constexpr uint64_t kAlignment = 512;
// A hint only: places device pointers in a region that looks like a GPU's and is far from the
// heap, which makes host/device pointer mix-ups visible in logs.
constexpr uintptr_t kPreferredArenaBase = 0x7e0000000000;

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

uint64_t PageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceMemory>> DeviceMemory::Create(uint64_t capacity) {
  capacity = RoundUp(capacity, PageSize());
  void* arena = mmap(reinterpret_cast<void*>(kPreferredArenaBase), capacity, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena == MAP_FAILED) {
    return CudaError(CUDA_ERROR_OUT_OF_MEMORY,
                     std::string("reserving device memory: mmap: ") + std::strerror(errno));
  }
  return std::unique_ptr<DeviceMemory>(new DeviceMemory(static_cast<uint8_t*>(arena), capacity));
}

DeviceMemory::DeviceMemory(uint8_t* arena, uint64_t capacity) : arena_(arena), capacity_(capacity) {
  free_ranges_.emplace(0, capacity);
}

DeviceMemory::~DeviceMemory() {
  for (auto& [base, allocation] : allocations_) {
    if (allocation.kind == AllocationKind::kHostPinned) {
      munmap(reinterpret_cast<void*>(base), RoundUp(allocation.size, PageSize()));
    }
  }
  munmap(arena_, capacity_);
}

absl::StatusOr<uint64_t> DeviceMemory::Allocate(uint64_t size, AllocationKind kind,
                                                uint64_t owner, uint64_t tenant) {
  if (size == 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "allocation of 0 bytes");
  if (size > capacity_) return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "larger than device memory");
  uint64_t length = RoundUp(size, kAlignment);
  std::unique_lock lock(mu_);
  if (length > capacity_ - arena_used_ - physical_used_) {
    return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "device memory exhausted");
  }
  for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
    if (it->second < length) continue;
    uint64_t offset = it->first;
    uint64_t remaining = it->second - length;
    free_ranges_.erase(it);
    if (remaining > 0) free_ranges_.emplace(offset + length, remaining);
    arena_used_ += length;
    uint64_t base = reinterpret_cast<uint64_t>(arena_) + offset;
    allocations_.emplace(base,
                         Allocation{base, size, kind, owner, 0, ++last_buffer_id_, tenant});
    return base;
  }
  return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "device memory exhausted");
}

absl::Status DeviceMemory::SetTenant(uint64_t base, uint64_t tenant) {
  std::unique_lock lock(mu_);
  const auto it = allocations_.find(base);
  if (it == allocations_.end()) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "no allocation starts at this address");
  }
  it->second.tenant = tenant;
  return absl::OkStatus();
}

absl::StatusOr<void*> DeviceMemory::AllocateHost(uint64_t size, unsigned flags, uint64_t owner) {
  if (size == 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "host allocation of 0 bytes");
  void* memory = mmap(nullptr, RoundUp(size, PageSize()), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "mmap of host memory");
  std::unique_lock lock(mu_);
  uint64_t base = reinterpret_cast<uint64_t>(memory);
  allocations_.emplace(
      base, Allocation{base, size, AllocationKind::kHostPinned, owner, flags, ++last_buffer_id_});
  return memory;
}

absl::Status DeviceMemory::RegisterHost(void* pointer, uint64_t size, unsigned flags,
                                        uint64_t owner) {
  if (pointer == nullptr || size == 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "null pointer or empty range");
  }
  uint64_t base = reinterpret_cast<uint64_t>(pointer);
  if (base + size < base) return CudaError(CUDA_ERROR_INVALID_VALUE, "range wraps around");
  std::unique_lock lock(mu_);
  if (OverlapsAny(allocations_, base, size)) {
    return CudaError(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                     "range overlaps registered or device memory");
  }
  allocations_.emplace(base, Allocation{base, size, AllocationKind::kHostRegistered, owner, flags,
                                        ++last_buffer_id_});
  return absl::OkStatus();
}

absl::Status DeviceMemory::Release(uint64_t base, unsigned kinds, CUresult missing) {
  std::unique_lock lock(mu_);
  auto it = allocations_.find(base);
  if (it == allocations_.end() || (KindBit(it->second.kind) & kinds) == 0) {
    return CudaError(missing, "not the start of a live allocation");
  }
  ReleaseLocked(it);
  return absl::OkStatus();
}

void DeviceMemory::ReleaseAllOwnedBy(uint64_t owner) {
  std::unique_lock lock(mu_);
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    auto current = it++;
    if (current->second.owner == owner) ReleaseLocked(current);
  }
}

void DeviceMemory::ReleaseLocked(std::map<uint64_t, Allocation>::iterator it) {
  const Allocation& allocation = it->second;
  switch (allocation.kind) {
    case AllocationKind::kDevice:
    case AllocationKind::kManaged:
    case AllocationKind::kDeviceHeap:
      ReturnToArenaLocked(allocation.base - reinterpret_cast<uint64_t>(arena_),
                          RoundUp(allocation.size, kAlignment));
      break;
    case AllocationKind::kHostPinned:
      munmap(reinterpret_cast<void*>(allocation.base), RoundUp(allocation.size, PageSize()));
      break;
    case AllocationKind::kHostRegistered:
    case AllocationKind::kMapped:  // never released here: virtual_memory.h owns mappings
      break;
  }
  allocations_.erase(it);
}

void DeviceMemory::ReturnToArenaLocked(uint64_t offset, uint64_t length) {
  arena_used_ -= length;
  // Give whole pages back to the OS so that freed device memory stops costing host memory.
  uint64_t page = PageSize();
  uint64_t first_page = RoundUp(offset, page);
  uint64_t end_page = (offset + length) / page * page;
  if (end_page > first_page) madvise(arena_ + first_page, end_page - first_page, MADV_DONTNEED);

  auto next = free_ranges_.lower_bound(offset);
  if (next != free_ranges_.end() && next->first == offset + length) {
    length += next->second;
    next = free_ranges_.erase(next);
  }
  if (next != free_ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += length;
      return;
    }
  }
  free_ranges_.emplace(offset, length);
}

std::optional<Allocation> DeviceMemory::Find(uint64_t address) const {
  std::shared_lock lock(mu_);
  const auto it = FindContaining(allocations_, address);
  if (it == allocations_.end()) return std::nullopt;
  return it->second;
}

absl::Status DeviceMemory::CheckRange(uint64_t address, uint64_t size, bool write) const {
  // A range may run on across adjacent mappings of one reservation: its addresses are contiguous
  // to the device as a virtual address range (CUDA driver API, "Virtual Memory Management").
  uint64_t at = address;
  uint64_t left = size;
  std::optional<Allocation> allocation = Find(at);
  while (allocation) {
    if (!Permits(allocation->access, write)) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       std::string("the device may not ") + (write ? "write" : "read") +
                           " this mapping (cuMemSetAccess): " + std::to_string(at));
    }
    const uint64_t end = allocation->base + allocation->size;
    if (left <= end - at) return absl::OkStatus();
    left -= end - at;
    at = end;
    const uint64_t reservation = allocation->range_base;
    const bool mapped = allocation->kind == AllocationKind::kMapped;
    allocation = Find(at);
    if (!mapped || !allocation || allocation->kind != AllocationKind::kMapped ||
        allocation->range_base != reservation) {
      break;
    }
  }
  return CudaError(CUDA_ERROR_INVALID_VALUE,
                   "range is not inside one live allocation: " + std::to_string(address));
}

absl::Status DeviceMemory::Charge(uint64_t bytes) {
  std::unique_lock lock(mu_);
  if (bytes > capacity_ - arena_used_ - physical_used_) {
    return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "device memory exhausted");
  }
  physical_used_ += bytes;
  return absl::OkStatus();
}

void DeviceMemory::Uncharge(uint64_t bytes) {
  std::unique_lock lock(mu_);
  physical_used_ -= bytes;
}

absl::Status DeviceMemory::AddMapping(uint64_t base, uint64_t size, uint64_t range_base,
                                      uint64_t range_size) {
  std::unique_lock lock(mu_);
  if (OverlapsAny(allocations_, base, size)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the range overlaps registered host memory");
  }
  Allocation mapping{base, size, AllocationKind::kMapped, 0, 0, ++last_buffer_id_};
  mapping.access = MemoryAccess::kNone;  // "all mappings start with no accessibility setup"
  mapping.range_base = range_base;
  mapping.range_size = range_size;
  allocations_.emplace(base, mapping);
  return absl::OkStatus();
}

void DeviceMemory::RemoveMapping(uint64_t base) {
  std::unique_lock lock(mu_);
  const auto it = allocations_.find(base);
  if (it != allocations_.end() && it->second.kind == AllocationKind::kMapped) {
    allocations_.erase(it);
  }
}

void DeviceMemory::SetMappingAccess(uint64_t base, MemoryAccess access) {
  std::unique_lock lock(mu_);
  const auto it = allocations_.find(base);
  if (it != allocations_.end() && it->second.kind == AllocationKind::kMapped) {
    it->second.access = access;
  }
}

uint64_t DeviceMemory::used() const {
  std::shared_lock lock(mu_);
  return arena_used_ + physical_used_;
}

}  // namespace tally::emu
