// Creation (memfd, seals, mmap) and validated attachment of the shared segment, and the
// same-address mapping of its host region.
#include "ipc/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <random>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/protocol_version.h"
#include "ipc/spsc_ring.h"
#include "ipc/syscall.h"

namespace tally::ipc {
namespace {

constexpr uint64_t kPage = 4096;
// Record sizes are 32-bit and a record may take half a ring.
constexpr uint64_t kMaxRingCapacity = uint64_t{1} << 31;
// Bounds every size so that sums of offsets cannot overflow 64 bits.
constexpr uint64_t kMaxBulkSize = uint64_t{1} << 40;
constexpr uint64_t kMaxSegmentSize = uint64_t{1} << 42;
constexpr uint64_t kMaxHostRegionSize = uint64_t{1} << 40;
// Host region slots are this far apart: a guard gap between two clients' regions.
constexpr uint64_t kHostRegionSlotAlign = uint64_t{1} << 30;
constexpr uint64_t kRegionAlign = alignof(RingControl);

constexpr uint64_t RoundUp(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

absl::Status CheckRingCapacity(const char* which, uint64_t capacity) {
  if (!std::has_single_bit(capacity) || capacity < kMinRingCapacity ||
      capacity > kMaxRingCapacity) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s ring capacity %d is not a power of two in [%d, %d]", which, capacity,
                        kMinRingCapacity, kMaxRingCapacity));
  }
  return absl::OkStatus();
}

// Maps the host region of `fd` at exactly `address`. With `replace`, over this process's own
// reservation of that range; otherwise replacing nothing: a SyscallError with EEXIST when part
// of the range is in use.
absl::Status MapHostRegionAt(int fd, const SegmentLayout& layout, uint64_t address, bool replace) {
  void* const wanted = reinterpret_cast<void*>(address);
  const int placement = replace ? MAP_FIXED : MAP_FIXED_NOREPLACE;
  TALLY_ASSIGN_OR_RETURN(intptr_t mapped, RetryEintr("mmap(host region)", [&]() -> intptr_t {
                           void* p = mmap(wanted, layout.host_region_size, PROT_READ | PROT_WRITE,
                                          MAP_SHARED | placement, fd,
                                          static_cast<off_t>(layout.host_region_offset));
                           return p == MAP_FAILED ? -1 : reinterpret_cast<intptr_t>(p);
                         }));
  if (reinterpret_cast<void*>(mapped) != wanted) {  // kernels before 4.17 take it as a hint
    munmap(reinterpret_cast<void*>(mapped), layout.host_region_size);
    return absl::UnimplementedError(
        "mmap ignored MAP_FIXED_NOREPLACE (Linux 4.17 or later needed)");
  }
  return absl::OkStatus();
}

// The server's choice: address space (no memory) at a free slot, which the memfd is then mapped
// over. The search starts at a random slot, so that a client cannot predict where another
// client's page-locked memory is (its device pointers are its host addresses). Only the
// server's own mappings are visible here; a client with something at the same place learns so
// when it attaches.
absl::StatusOr<uint64_t> ReserveHostRegionSlot(uint64_t size) {
  const uint64_t stride = RoundUp(size, kHostRegionSlotAlign) + kHostRegionSlotAlign;
  const uint64_t slots = (kHostRegionLimit - kHostRegionBase) / stride;
  const uint64_t first = slots == 0 ? 0 : std::random_device{}() % slots;
  for (uint64_t i = 0; i < slots; ++i) {
    const uint64_t address = kHostRegionBase + (first + i) % slots * stride;
    void* const wanted = reinterpret_cast<void*>(address);
    void* const p = mmap(wanted, size, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == wanted) return address;
    if (p != MAP_FAILED) {
      munmap(p, size);
      return absl::UnimplementedError(
          "mmap ignored MAP_FIXED_NOREPLACE (Linux 4.17 or later needed)");
    }
    if (errno != EEXIST) return SyscallError("mmap(host region reservation)", errno);
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("no free %d-byte slot for a host region in [0x%x, 0x%x)", size,
                      kHostRegionBase, kHostRegionLimit));
}

absl::StatusOr<std::byte*> MapShared(int fd, uint64_t size) {
  TALLY_ASSIGN_OR_RETURN(intptr_t address, RetryEintr("mmap(segment)", [&]() -> intptr_t {
                           void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                           return p == MAP_FAILED ? -1 : reinterpret_cast<intptr_t>(p);
                         }));
  return reinterpret_cast<std::byte*>(address);
}

}  // namespace

absl::StatusOr<SegmentLayout> ComputeLayout(const SegmentConfig& config) {
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("request", config.request_ring_capacity));
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("response", config.response_ring_capacity));
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("callback", config.callback_ring_capacity));
  if (config.bulk_size == 0 || config.bulk_size > kMaxBulkSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bulk area size %d is not in [1, %d]", config.bulk_size, kMaxBulkSize));
  }
  SegmentLayout layout{};
  layout.request_ring_offset = RoundUp(sizeof(SegmentHeader), kPage);
  layout.request_ring_capacity = config.request_ring_capacity;
  layout.response_ring_offset =
      RoundUp(layout.request_ring_offset + RingRegionSize(config.request_ring_capacity), kPage);
  layout.response_ring_capacity = config.response_ring_capacity;
  layout.callback_ring_offset =
      RoundUp(layout.response_ring_offset + RingRegionSize(config.response_ring_capacity), kPage);
  layout.callback_ring_capacity = config.callback_ring_capacity;
  layout.bulk_offset =
      RoundUp(layout.callback_ring_offset + RingRegionSize(config.callback_ring_capacity), kPage);
  layout.bulk_size = RoundUp(config.bulk_size, kPage);
  if (config.host_region_size > kMaxHostRegionSize) {
    return absl::InvalidArgumentError(absl::StrFormat("host region size %d is above %d",
                                                      config.host_region_size, kMaxHostRegionSize));
  }
  layout.host_region_offset = layout.bulk_offset + layout.bulk_size;
  layout.host_region_size = RoundUp(config.host_region_size, kPage);
  layout.segment_size = layout.host_region_offset + layout.host_region_size;
  return layout;
}

absl::Status ValidateLayout(const SegmentLayout& l) {
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("request", l.request_ring_capacity));
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("response", l.response_ring_capacity));
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("callback", l.callback_ring_capacity));
  const bool sizes_bounded =
      l.segment_size <= kMaxSegmentSize && l.bulk_size <= kMaxBulkSize &&
      l.request_ring_offset <= kMaxSegmentSize && l.response_ring_offset <= kMaxSegmentSize &&
      l.callback_ring_offset <= kMaxSegmentSize && l.bulk_offset <= kMaxSegmentSize &&
      l.host_region_offset <= kMaxSegmentSize && l.host_region_size <= kMaxHostRegionSize;
  const bool aligned = l.request_ring_offset % kRegionAlign == 0 &&
                       l.response_ring_offset % kRegionAlign == 0 &&
                       l.callback_ring_offset % kRegionAlign == 0 &&
                       l.bulk_offset % kRegionAlign == 0 && l.host_region_offset % kPage == 0 &&
                       l.host_region_size % kPage == 0 && l.host_region_address % kPage == 0;
  const bool ordered =
      sizes_bounded && l.request_ring_offset >= sizeof(SegmentHeader) &&
      l.request_ring_offset + RingRegionSize(l.request_ring_capacity) <= l.response_ring_offset &&
      l.response_ring_offset + RingRegionSize(l.response_ring_capacity) <=
          l.callback_ring_offset &&
      l.callback_ring_offset + RingRegionSize(l.callback_ring_capacity) <= l.bulk_offset &&
      l.bulk_offset + l.bulk_size <= l.host_region_offset &&
      l.host_region_offset + l.host_region_size == l.segment_size;
  // Only inside the range servers use: never over the null page or the client's usual mappings.
  const bool placed =
      l.host_region_size == 0 ||
      (l.host_region_address >= kHostRegionBase && l.host_region_address <= kHostRegionLimit &&
       l.host_region_size <= kHostRegionLimit - l.host_region_address);
  if (!aligned || !ordered || !placed) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "malformed segment layout: size %d, request ring at %d (%d bytes), response ring at %d "
        "(%d bytes), callback ring at %d (%d bytes), bulk area at %d (%d bytes), host region at "
        "%d (%d bytes, address 0x%x)",
        l.segment_size, l.request_ring_offset, l.request_ring_capacity, l.response_ring_offset,
        l.response_ring_capacity, l.callback_ring_offset, l.callback_ring_capacity, l.bulk_offset,
        l.bulk_size, l.host_region_offset, l.host_region_size, l.host_region_address));
  }
  return absl::OkStatus();
}

absl::StatusOr<Segment> Segment::Create(const SegmentConfig& config) {
  TALLY_ASSIGN_OR_RETURN(SegmentLayout layout, ComputeLayout(config));
  uint64_t slot = 0;
  if (layout.host_region_size > 0) {
    absl::StatusOr<uint64_t> reserved = ReserveHostRegionSlot(layout.host_region_size);
    if (reserved.ok()) {
      slot = *reserved;
    } else {
      // The client still works, without page-locked memory (its allocations say so).
      TALLY_LOG_WARN("IPC: a client gets no host region: {}", reserved.status().ToString());
      SegmentConfig without = config;
      without.host_region_size = 0;
      TALLY_ASSIGN_OR_RETURN(layout, ComputeLayout(without));
    }
  }
  auto release_slot = absl::MakeCleanup([&] {
    if (slot != 0) munmap(reinterpret_cast<void*>(slot), layout.host_region_size);
  });
  TALLY_ASSIGN_OR_RETURN(int raw_fd, RetryEintr("memfd_create", [] {
                           return memfd_create("tally-ipc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
                         }));
  UniqueFd fd(raw_fd);
  TALLY_RETURN_IF_ERROR(RetryEintr("ftruncate(segment)", [&] {
                          return ftruncate(fd.get(), static_cast<off_t>(layout.segment_size));
                        }).status());
  TALLY_RETURN_IF_ERROR(RetryEintr("fcntl(F_ADD_SEALS)", [&] {
                          return fcntl(fd.get(), F_ADD_SEALS,
                                       F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
                        }).status());
  if (slot != 0) {
    TALLY_RETURN_IF_ERROR(MapHostRegionAt(fd.get(), layout, slot, /*replace=*/true));
    layout.host_region_address = slot;
  }
  std::move(release_slot).Cancel();
  Segment segment(std::move(fd), nullptr, layout);
  segment.host_region_mapped_ = slot != 0;  // the destructor unmaps it from here on
  TALLY_ASSIGN_OR_RETURN(segment.base_, MapShared(segment.fd_.get(), layout.host_region_offset));
  const SegmentHeader header{kSegmentMagic, kProtocolVersion, layout};
  std::memcpy(segment.base_, &header, sizeof(header));
  InitRing(segment.base_ + layout.request_ring_offset);
  InitRing(segment.base_ + layout.response_ring_offset);
  InitRing(segment.base_ + layout.callback_ring_offset);
  return segment;
}

absl::StatusOr<Segment> Segment::Attach(UniqueFd fd, const SegmentLayout& layout) {
  TALLY_RETURN_IF_ERROR(ValidateLayout(layout));
  struct stat st {};
  TALLY_RETURN_IF_ERROR(
      RetryEintr("fstat(segment)", [&] { return fstat(fd.get(), &st); }).status());
  if (static_cast<uint64_t>(st.st_size) != layout.segment_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shared segment has %d bytes, the handshake announced %d", st.st_size,
                        layout.segment_size));
  }
  TALLY_ASSIGN_OR_RETURN(std::byte * base, MapShared(fd.get(), layout.host_region_offset));
  Segment segment(std::move(fd), base, layout);
  SegmentHeader header;
  std::memcpy(&header, base, sizeof(header));
  if (header.magic != kSegmentMagic || header.protocol_version != kProtocolVersion ||
      !(header.layout == layout)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shared segment header (magic 0x%x, version %d) does not match the handshake (version %d)",
        header.magic, header.protocol_version, kProtocolVersion));
  }
  if (layout.host_region_size > 0) {
    const absl::Status mapped =
        MapHostRegionAt(segment.fd_.get(), layout, layout.host_region_address, /*replace=*/false);
    segment.host_region_mapped_ = mapped.ok();
    if (ErrnoOf(mapped) == EEXIST) {
      segment.host_region_error_ = absl::FailedPreconditionError(absl::StrFormat(
          "the server placed this process's page-locked memory at [0x%x, 0x%x), which this "
          "process already uses for something else",
          layout.host_region_address, layout.host_region_address + layout.host_region_size));
    } else if (!mapped.ok()) {
      segment.host_region_error_ = mapped;
    }
  }
  return segment;
}

absl::StatusOr<std::span<std::byte>> Segment::host_region() const {
  if (host_region_mapped_) {
    return std::span<std::byte>(reinterpret_cast<std::byte*>(layout_.host_region_address),
                                layout_.host_region_size);
  }
  if (!host_region_error_.ok()) return host_region_error_;
  return absl::FailedPreconditionError("the shared segment has no host region");
}

absl::Status Segment::MapHostRegionAlias(void* at, uint64_t address, size_t size, int prot) const {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t begin = layout_.host_region_address;
  if (!host_region_mapped_ || address < begin || address - begin > layout_.host_region_size ||
      size > layout_.host_region_size - (address - begin) || address % page != 0 ||
      size % page != 0 || reinterpret_cast<uintptr_t>(at) % page != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("[0x%x, +%d) is no page-aligned range of the host region", address, size));
  }
  const off_t offset = static_cast<off_t>(layout_.host_region_offset + (address - begin));
  void* mapped = mmap(at, size, prot, MAP_SHARED | MAP_FIXED, fd_.get(), offset);
  if (mapped == MAP_FAILED) return SyscallError("mmap(host region alias)", errno);
  return absl::OkStatus();
}

Segment::Segment(Segment&& other) noexcept
    : fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      layout_(other.layout_),
      host_region_mapped_(std::exchange(other.host_region_mapped_, false)),
      host_region_error_(std::move(other.host_region_error_)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    Unmap();
    fd_ = std::move(other.fd_);
    base_ = std::exchange(other.base_, nullptr);
    layout_ = other.layout_;
    host_region_mapped_ = std::exchange(other.host_region_mapped_, false);
    host_region_error_ = std::move(other.host_region_error_);
  }
  return *this;
}

Segment::~Segment() { Unmap(); }

void Segment::Unmap() {
  if (base_ != nullptr) munmap(base_, layout_.host_region_offset);
  if (host_region_mapped_) {
    munmap(reinterpret_cast<void*>(layout_.host_region_address), layout_.host_region_size);
  }
  base_ = nullptr;
  host_region_mapped_ = false;
}

}  // namespace tally::ipc
