// The per-client shared segment: a memfd the server creates and passes to the client, laid out
// as a header, the request ring (client -> server), the response ring (server -> client), the
// callback ring (server -> client: requests the client answers, such as running a host
// function, read by a thread of its own), the bulk-data area and the host region. Offsets only,
// never pointers: each process maps the first five at its own address. The host region (the
// client's page-locked, mapped and managed memory) is the exception: both map it at the same
// address, which the server chooses, so that one pointer value serves the application, the
// server and kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "absl/status/statusor.h"
#include "ipc/unique_fd.h"

namespace tally::ipc {

// Sizes the server chooses per client. memfd pages are only allocated when touched, so a large
// bulk area costs nothing until a client copies that much.
struct SegmentConfig {
  uint64_t request_ring_capacity = uint64_t{1} << 20;
  uint64_t response_ring_capacity = uint64_t{256} << 10;
  uint64_t callback_ring_capacity = uint64_t{64} << 10;
  uint64_t bulk_size = uint64_t{64} << 20;
  // Address space only: pages exist once the client touches them.
  uint64_t host_region_size = uint64_t{8} << 30;
};

// Where servers place host regions: far from where Linux puts the heap (just above the binary)
// and mmap()s (below the stack, near 0x7fxx'xxxx'xxxx), so that the address a server picks is
// normally free in its client too; one slot per client of a server, chosen at random.
#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer lets a program map memory only where its shadow layout has room for
// application memory, which that range is not; [64 GiB, 512 GiB) is (its "low" application
// range, above where a non-PIE binary and its heap sit). Only the sanitizer build's unit tests
// run so.
inline constexpr uint64_t kHostRegionBase = uint64_t{0x10} << 32;
inline constexpr uint64_t kHostRegionLimit = uint64_t{0x80} << 32;
#else
inline constexpr uint64_t kHostRegionBase = uint64_t{0x2000} << 32;
inline constexpr uint64_t kHostRegionLimit = uint64_t{0x3000} << 32;
#endif

// Where everything is, in bytes from the segment start. Sent in the handshake reply and repeated
// in the segment header; the client checks that both agree and that it is well formed.
struct SegmentLayout {
  uint64_t segment_size;
  uint64_t request_ring_offset;  // a RingControl, then request_ring_capacity bytes
  uint64_t request_ring_capacity;
  uint64_t response_ring_offset;
  uint64_t response_ring_capacity;
  uint64_t callback_ring_offset;
  uint64_t callback_ring_capacity;
  uint64_t bulk_offset;
  uint64_t bulk_size;
  uint64_t host_region_offset;  // the rest of the segment; may be empty
  uint64_t host_region_size;
  uint64_t host_region_address;  // where both sides map it (0 in ComputeLayout's result)

  friend bool operator==(const SegmentLayout&, const SegmentLayout&) = default;
};
static_assert(std::is_trivially_copyable_v<SegmentLayout> &&
              std::is_standard_layout_v<SegmentLayout>);

inline constexpr uint32_t kSegmentMagic = 0x544c5953;  // 'TLYS'

struct SegmentHeader {
  uint32_t magic;
  uint32_t protocol_version;
  SegmentLayout layout;
};
static_assert(std::is_trivially_copyable_v<SegmentHeader> &&
              std::is_standard_layout_v<SegmentHeader>);

// Page-aligned regions in the order header, request ring, response ring, callback ring, bulk
// area, host region.
// InvalidArgument for ring capacities that are not powers of two of at least kMinRingCapacity.
absl::StatusOr<SegmentLayout> ComputeLayout(const SegmentConfig& config);

// Checks a layout received from the peer: regions inside the segment, in order, not
// overlapping, rings of a valid capacity. Every later offset computation relies on it.
absl::Status ValidateLayout(const SegmentLayout& layout);

class Segment {
 public:
  // Server side: a sealed memfd (its size can no longer change, so the client cannot make the
  // server's accesses fault by shrinking it) with header and rings initialised, and the host
  // region mapped at a free slot of [kHostRegionBase, kHostRegionLimit), picked at random.
  static absl::StatusOr<Segment> Create(const SegmentConfig& config);
  // Client side: maps the received memfd after checking its size and header against `layout`.
  // The host region is mapped at layout.host_region_address without replacing anything: when
  // that range is taken in this process, host_region() says so and the rest works.
  static absl::StatusOr<Segment> Attach(UniqueFd fd, const SegmentLayout& layout);

  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // This side's own copy of the layout: never re-read from shared memory.
  const SegmentLayout& layout() const { return layout_; }
  const UniqueFd& fd() const { return fd_; }
  std::byte* base() const { return base_; }
  std::byte* request_ring() const { return base_ + layout_.request_ring_offset; }
  std::byte* response_ring() const { return base_ + layout_.response_ring_offset; }
  std::byte* callback_ring() const { return base_ + layout_.callback_ring_offset; }
  std::span<std::byte> bulk() const { return {base_ + layout_.bulk_offset, layout_.bulk_size}; }
  // The host region at layout().host_region_address, or why this process could not map it.
  absl::StatusOr<std::span<std::byte>> host_region() const;
  // Maps the host region's pages [address, address + size) (page-aligned, inside the region) a
  // second time, at `at`, replacing whatever this process had there (MAP_FIXED), with `prot`:
  // both views share the pages. The client maps memory an application registers this way
  // (cudaHostRegister): the application keeps its own address, the server and the device use
  // the region's.
  absl::Status MapHostRegionAlias(void* at, uint64_t address, size_t size, int prot) const;

 private:
  Segment(UniqueFd fd, std::byte* base, const SegmentLayout& layout)
      : fd_(std::move(fd)), base_(base), layout_(layout) {}
  void Unmap();

  UniqueFd fd_;
  std::byte* base_ = nullptr;  // maps [0, host_region_offset)
  SegmentLayout layout_{};
  bool host_region_mapped_ = false;
  absl::Status host_region_error_;  // when not mapped
};

}  // namespace tally::ipc
