// Reservations (PROT_NONE mappings), memfd-backed physical allocations and their mappings.
#include "emulator/internal/virtual_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "common/status.h"
#include "emulator/internal/cuda_status.h"
#include "emulator/internal/interval_map.h"

namespace tally::emu {
namespace {

// Keeps handles apart from every HandleTable's (tags 1..7, internal/driver.h, texture.h).
constexpr uint64_t kHandleTag = 8;
// Where reservations go when the caller gives no hint: above the arena's preferred place
// (device_memory.cc), where GPU-like addresses are easy to tell from the heap's.
constexpr uint64_t kPreferredReservationBase = 0x7e8000000000;

uint64_t PageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

absl::Status SystemError(CUresult code, const char* call) {
  return CudaError(code, std::string(call) + ": " + std::strerror(errno));
}

// An inaccessible, uncommitted host mapping of [base, base + size); at `base` exactly with
// `fixed` (replacing what is there), else at `base` if that range is free.
void* MapNothing(uint64_t base, uint64_t size, bool fixed) {
  return mmap(reinterpret_cast<void*>(base), size, PROT_NONE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (fixed ? MAP_FIXED : 0), -1, 0);
}

// [base, base + size) with base a multiple of `alignment`, placed at `hint` if that is free.
absl::StatusOr<uint64_t> MapAligned(uint64_t size, uint64_t alignment, uint64_t hint) {
  if (size > UINT64_MAX - alignment) return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "too large");
  const uint64_t span = size + alignment;  // room to align the start
  void* mapped = MapNothing(hint, span, false);
  if (mapped == MAP_FAILED) return SystemError(CUDA_ERROR_OUT_OF_MEMORY, "reserving: mmap");
  const uint64_t start = reinterpret_cast<uint64_t>(mapped);
  const uint64_t base = (start + alignment - 1) / alignment * alignment;
  if (base > start) munmap(mapped, base - start);
  if (start + span > base + size) {
    munmap(reinterpret_cast<void*>(base + size), start + span - base - size);
  }
  return base;
}

}  // namespace

// A cuMemCreate allocation: a memfd, charged against the device memory until the last handle
// reference and mapping are gone.
struct VirtualMemory::Physical {
  Physical(DeviceMemory& memory, int fd, uint64_t size) : memory(memory), fd(fd), size(size) {}
  ~Physical() {
    close(fd);
    memory.Uncharge(size);
  }
  Physical(const Physical&) = delete;
  Physical& operator=(const Physical&) = delete;

  DeviceMemory& memory;
  const int fd;
  const uint64_t size;
};

VirtualMemory::~VirtualMemory() {
  for (const auto& [base, reservation] : reservations_) {
    munmap(reinterpret_cast<void*>(base), reservation.size);
  }
}

absl::StatusOr<uint64_t> VirtualMemory::Reserve(uint64_t size, uint64_t alignment, uint64_t hint) {
  const uint64_t page = PageSize();
  if (size == 0 || size % page != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "size must be a non-zero multiple of the page size");
  }
  if (hint % page != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "addr must be a multiple of the page size");
  }
  if ((alignment & (alignment - 1)) != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "alignment must be 0 or a power of two");
  }
  alignment = std::max(alignment, kGranularity);
  std::lock_guard lock(mu_);
  uint64_t base = 0;
  // The hint, where that exact range is free (MAP_FIXED_NOREPLACE fails, or on kernels before
  // 4.17 places the mapping elsewhere, when it is not).
  if (hint != 0 && hint % alignment == 0 && size <= UINT64_MAX - hint) {
    void* mapped = mmap(reinterpret_cast<void*>(hint), size, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (mapped != MAP_FAILED && reinterpret_cast<uint64_t>(mapped) != hint) munmap(mapped, size);
    if (reinterpret_cast<uint64_t>(mapped) == hint) base = hint;
  }
  if (base == 0) {
    if (next_hint_ == 0) next_hint_ = kPreferredReservationBase;
    TALLY_ASSIGN_OR_RETURN(base, MapAligned(size, alignment, next_hint_));
    next_hint_ = base + size;
  }
  reservations_.emplace(base, Reservation{size});
  return base;
}

absl::Status VirtualMemory::Free(uint64_t base, uint64_t size) {
  std::lock_guard lock(mu_);
  const auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second.size != size) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "not a reservation's start and size");
  }
  if (OverlapsAny(mappings_, base, size)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the reservation is still mapped (cuMemUnmap)");
  }
  munmap(reinterpret_cast<void*>(base), size);
  reservations_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<CUmemGenericAllocationHandle> VirtualMemory::Create(uint64_t size) {
  if (size == 0 || size % kGranularity != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "size must be a non-zero multiple of 2 MiB");
  }
  TALLY_RETURN_IF_ERROR(memory_.Charge(size));
  const int fd = memfd_create("tally-emu-vmm", MFD_CLOEXEC);
  if (fd < 0) {
    memory_.Uncharge(size);
    return SystemError(CUDA_ERROR_OUT_OF_MEMORY, "memfd_create");
  }
  auto physical = std::make_shared<Physical>(memory_, fd, size);  // owns fd and the charge now
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return SystemError(CUDA_ERROR_OUT_OF_MEMORY, "ftruncate");
  }
  std::lock_guard lock(mu_);
  const uint64_t id = (kHandleTag << 56) | ++last_serial_;
  handles_.emplace(id, HandleEntry{std::move(physical), 1});
  return id;
}

absl::Status VirtualMemory::Release(CUmemGenericAllocationHandle handle) {
  std::lock_guard lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end()) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown handle");
  if (--it->second.references == 0) handles_.erase(it);  // mappings keep the memory
  return absl::OkStatus();
}

absl::StatusOr<CUmemGenericAllocationHandle> VirtualMemory::Retain(uint64_t address) {
  std::lock_guard lock(mu_);
  const auto mapping = FindContaining(mappings_, address);
  if (mapping == mappings_.end()) return CudaError(CUDA_ERROR_INVALID_VALUE, "address not mapped");
  HandleEntry& entry = handles_[mapping->second.handle];
  entry.physical = mapping->second.physical;
  ++entry.references;
  return mapping->second.handle;
}

absl::StatusOr<uint64_t> VirtualMemory::AllocationSize(CUmemGenericAllocationHandle handle) const {
  std::lock_guard lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end()) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown handle");
  return it->second.physical->size;
}

absl::Status VirtualMemory::Map(uint64_t base, uint64_t size, uint64_t offset,
                                CUmemGenericAllocationHandle handle) {
  if (base % kGranularity != 0 || size % kGranularity != 0 || offset % kGranularity != 0 ||
      size == 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE,
                     "ptr, size and offset must be multiples of 2 MiB, size non-zero");
  }
  std::lock_guard lock(mu_);
  const auto it = handles_.find(handle);
  if (it == handles_.end()) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown handle");
  const std::shared_ptr<Physical>& physical = it->second.physical;
  if (offset > physical->size || size > physical->size - offset) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "offset + size exceeds the allocation");
  }
  const auto reservation = FindContaining(reservations_, base);
  if (reservation == reservations_.end() ||
      size > reservation->first + reservation->second.size - base) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the range is not inside one reservation");
  }
  if (OverlapsAny(mappings_, base, size)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the range is already mapped");
  }
  TALLY_RETURN_IF_ERROR(
      memory_.AddMapping(base, size, reservation->first, reservation->second.size));
  void* mapped = mmap(reinterpret_cast<void*>(base), size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_FIXED, physical->fd, static_cast<off_t>(offset));
  if (mapped == MAP_FAILED) {
    absl::Status status = SystemError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemMap: mmap");
    memory_.RemoveMapping(base);
    return status;
  }
  mappings_.emplace(base, Mapping{size, handle, physical});
  return absl::OkStatus();
}

absl::Status VirtualMemory::Unmap(uint64_t base, uint64_t size) {
  std::lock_guard lock(mu_);
  const auto it = mappings_.find(base);
  if (it == mappings_.end() || it->second.size != size) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "not exactly a mapped range");
  }
  memory_.RemoveMapping(base);
  // Back to a reservation: the pages' contents and access are gone.
  if (MapNothing(base, size, true) == MAP_FAILED) {
    return SystemError(CUDA_ERROR_OUT_OF_MEMORY, "cuMemUnmap: mmap");
  }
  mappings_.erase(it);  // frees the allocation if this was its last mapping and reference
  return absl::OkStatus();
}

absl::Status VirtualMemory::SetAccess(uint64_t base, uint64_t size, MemoryAccess access, bool apply,
                                      bool* reduced) {
  if (size == 0 || size > UINT64_MAX - base) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "empty or wrapping range");
  }
  std::lock_guard lock(mu_);
  std::vector<uint64_t> covered;
  uint64_t at = base;
  for (auto it = mappings_.find(base); at < base + size; ++it) {
    if (it == mappings_.end() || it->first != at || it->second.size > base + size - at) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       "the range is not a sequence of whole, adjacent mappings");
    }
    covered.push_back(at);
    at += it->second.size;
  }
  *reduced = false;
  for (uint64_t mapping : covered) {
    const MemoryAccess before = memory_.Find(mapping)->access;
    *reduced |= (before == MemoryAccess::kReadWrite && access != MemoryAccess::kReadWrite) ||
                (before == MemoryAccess::kRead && access == MemoryAccess::kNone);
    if (apply) memory_.SetMappingAccess(mapping, access);
  }
  return absl::OkStatus();
}

absl::StatusOr<MemoryAccess> VirtualMemory::GetAccess(uint64_t address) const {
  std::lock_guard lock(mu_);
  const auto mapping = FindContaining(mappings_, address);
  if (mapping == mappings_.end()) return CudaError(CUDA_ERROR_INVALID_VALUE, "address not mapped");
  return memory_.Find(mapping->first)->access;
}

}  // namespace tally::emu
