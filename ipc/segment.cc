// Creation (memfd, seals, mmap) and validated attachment of the shared segment.
#include "ipc/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <bit>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
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
  layout.bulk_offset =
      RoundUp(layout.response_ring_offset + RingRegionSize(config.response_ring_capacity), kPage);
  layout.bulk_size = RoundUp(config.bulk_size, kPage);
  layout.segment_size = layout.bulk_offset + layout.bulk_size;
  return layout;
}

absl::Status ValidateLayout(const SegmentLayout& l) {
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("request", l.request_ring_capacity));
  TALLY_RETURN_IF_ERROR(CheckRingCapacity("response", l.response_ring_capacity));
  const bool sizes_bounded = l.segment_size <= kMaxSegmentSize && l.bulk_size <= kMaxBulkSize &&
                             l.request_ring_offset <= kMaxSegmentSize &&
                             l.response_ring_offset <= kMaxSegmentSize &&
                             l.bulk_offset <= kMaxSegmentSize;
  const bool aligned = l.request_ring_offset % kRegionAlign == 0 &&
                       l.response_ring_offset % kRegionAlign == 0 &&
                       l.bulk_offset % kRegionAlign == 0;
  const bool ordered =
      sizes_bounded && l.request_ring_offset >= sizeof(SegmentHeader) &&
      l.request_ring_offset + RingRegionSize(l.request_ring_capacity) <= l.response_ring_offset &&
      l.response_ring_offset + RingRegionSize(l.response_ring_capacity) <= l.bulk_offset &&
      l.bulk_offset + l.bulk_size <= l.segment_size;
  if (!aligned || !ordered) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "malformed segment layout: size %d, request ring at %d (%d bytes), response ring at %d "
        "(%d bytes), bulk area at %d (%d bytes)",
        l.segment_size, l.request_ring_offset, l.request_ring_capacity, l.response_ring_offset,
        l.response_ring_capacity, l.bulk_offset, l.bulk_size));
  }
  return absl::OkStatus();
}

absl::StatusOr<Segment> Segment::Create(const SegmentConfig& config) {
  TALLY_ASSIGN_OR_RETURN(const SegmentLayout layout, ComputeLayout(config));
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
  TALLY_ASSIGN_OR_RETURN(std::byte * base, MapShared(fd.get(), layout.segment_size));
  const SegmentHeader header{kSegmentMagic, kProtocolVersion, layout};
  std::memcpy(base, &header, sizeof(header));
  InitRing(base + layout.request_ring_offset);
  InitRing(base + layout.response_ring_offset);
  return Segment(std::move(fd), base, layout);
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
  TALLY_ASSIGN_OR_RETURN(std::byte * base, MapShared(fd.get(), layout.segment_size));
  Segment segment(std::move(fd), base, layout);
  SegmentHeader header;
  std::memcpy(&header, base, sizeof(header));
  if (header.magic != kSegmentMagic || header.protocol_version != kProtocolVersion ||
      !(header.layout == layout)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shared segment header (magic 0x%x, version %d) does not match the handshake (version %d)",
        header.magic, header.protocol_version, kProtocolVersion));
  }
  return segment;
}

Segment::Segment(Segment&& other) noexcept
    : fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      layout_(other.layout_) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    Unmap();
    fd_ = std::move(other.fd_);
    base_ = std::exchange(other.base_, nullptr);
    layout_ = other.layout_;
  }
  return *this;
}

Segment::~Segment() { Unmap(); }

void Segment::Unmap() {
  if (base_ != nullptr) munmap(base_, layout_.segment_size);
  base_ = nullptr;
}

}  // namespace tally::ipc
