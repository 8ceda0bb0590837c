// The bulk-data area: payloads too large for a ring record (memcpy sources and destinations,
// fatbins) travel as blocks in the shared segment, named in messages by a BulkRef. Only the
// client allocates (its allocator's bookkeeping lives in the area and only the client trusts
// it); the server only resolves refs, with bounds checks, and never runs the allocator on memory
// a client can scribble on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "absl/status/statusor.h"

namespace tally::ipc {

// A block of the bulk area on the wire: offset from the area's start and size, both bytes.
struct BulkRef {
  uint64_t offset;
  uint64_t size;
};
static_assert(std::is_trivially_copyable_v<BulkRef> && std::is_standard_layout_v<BulkRef>);

// Either side's view of the area. The bytes are shared with the peer: a server copies them
// before interpreting their content.
class BulkArea {
 public:
  BulkArea() = default;
  explicit BulkArea(std::span<std::byte> area) : area_(area) {}

  // The bytes `ref` names; OutOfRange unless the whole block lies inside the area.
  absl::StatusOr<std::span<std::byte>> Resolve(const BulkRef& ref) const;
  size_t size() const { return area_.size(); }

 private:
  std::span<std::byte> area_;
};

// Client-side allocator (Boost.Interprocess rbtree best fit, its metadata inside the area), for
// the bulk area and the host region. Thread-safe: the shim's host threads share it.
class BulkAllocator {
 public:
  // Formats `area`, which must be fresh from the server (it discards what the area held).
  static absl::StatusOr<std::unique_ptr<BulkAllocator>> Create(std::span<std::byte> area);
  ~BulkAllocator();

  // ResourceExhausted when no free block of `size` bytes exists right now. `alignment` (a power
  // of two) is relative to the area's start.
  absl::StatusOr<BulkRef> Allocate(size_t size, size_t alignment = 0);
  // `ref` must come from Allocate on this allocator and not have been freed.
  void Free(const BulkRef& ref);
  std::span<std::byte> Bytes(const BulkRef& ref) const;
  size_t free_bytes() const;

 private:
  struct Impl;
  explicit BulkAllocator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::ipc
