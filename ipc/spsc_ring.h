// Single-producer single-consumer ring of variable-size records in shared memory. The producer
// and the consumer keep their own positions privately and only read the peer's position from
// shared memory, validating it: a buggy or hostile peer can make reads fail, never go out of
// bounds. Each side caches the peer's position and reads it again only when its cached view is
// exhausted (the producer's full, the consumer's empty), so that a stream of records does not
// move the peer's cache line back and forth once per record. Records are contiguous (a padding
// record fills the end when one would wrap), so the consumer reads them in place.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/wait.h"

namespace tally::ipc {

// Two lines, not one: x86 prefetchers pull cache lines in adjacent pairs, so positions written by
// different processes are kept 128 bytes apart.
inline constexpr size_t kFalseSharingRange = 128;

// The shared part of a ring; the record bytes follow it. Positions are byte counts since the
// start, never wrapped (64 bits do not overflow in practice), so full and empty differ.
struct RingControl {
  alignas(kFalseSharingRange) std::atomic<uint64_t> head;  // written by the producer only
  alignas(kFalseSharingRange) std::atomic<uint64_t> tail;  // written by the consumer only
  // Announcements for WaitUntil: the consumer sleeps for data, the producer for room.
  alignas(kFalseSharingRange) std::atomic<uint32_t> consumer_sleeping;
  alignas(kFalseSharingRange) std::atomic<uint32_t> producer_sleeping;
};
static_assert(std::is_standard_layout_v<RingControl>);
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "ring positions are shared between processes and need lock-free atomics");

// Each record starts with this, at an 8-byte aligned position.
struct RecordHeader {
  uint32_t size;  // payload bytes (the record occupies 8 + size rounded up to 8)
  uint32_t kind;  // RecordKind
};
static_assert(sizeof(RecordHeader) == 8 && std::is_trivially_copyable_v<RecordHeader>);

enum class RecordKind : uint32_t {
  kData = 0x52444154,     // 'RDAT'
  kPadding = 0x52504144,  // 'RPAD': fills the end of the buffer; the next record is at offset 0
};

inline constexpr uint64_t kMinRingCapacity = 256;

// Memory a ring needs in the segment (control block + record bytes).
constexpr uint64_t RingRegionSize(uint64_t capacity) { return sizeof(RingControl) + capacity; }

// Capacity must be a power of two >= kMinRingCapacity (Segment validates the layout). Initialises
// a ring in fresh memory; done once by the side that creates the segment.
void InitRing(void* region);

class RingProducer {
 public:
  RingProducer() = default;
  // `region` holds a RingControl followed by `capacity` bytes. Not thread-safe: one producer.
  RingProducer(void* region, uint64_t capacity);
  // Move-only: two copies would be two producers on a single-producer ring.
  RingProducer(RingProducer&&) = default;
  RingProducer& operator=(RingProducer&&) = default;
  RingProducer(const RingProducer&) = delete;
  RingProducer& operator=(const RingProducer&) = delete;

  // A record payload may take up to half the buffer, so that it always fits after padding.
  size_t max_record_size() const { return capacity_ / 2 - sizeof(RecordHeader); }

  // Room for a record of `size` bytes: ResourceExhausted when the ring is full right now.
  // Calling it again before Commit() replaces the previous reservation.
  absl::StatusOr<std::span<std::byte>> TryReserve(size_t size);
  // As TryReserve, but waits for the consumer to make room.
  absl::StatusOr<std::span<std::byte>> Reserve(size_t size, const WaitOptions& options);
  // Publishes the reserved record; a system call only if the consumer sleeps.
  absl::Status Commit();

  // Reserve + copy + Commit.
  absl::Status Write(std::span<const std::byte> bytes, const WaitOptions& options);

 private:
  absl::Status CheckUsable(size_t size) const;
  // Bytes of padding a record of `record_span` bytes needs before it so as not to wrap.
  uint64_t PaddingBefore(uint64_t record_span) const;
  uint64_t RoomNeeded(size_t size) const;  // padding + record
  absl::StatusOr<bool> HasRoom(uint64_t needed);
  // Writes the headers of a record of `size` bytes (and of padding before it) at head_; the
  // room has been checked.
  std::span<std::byte> Place(size_t size);

  RingControl* control_ = nullptr;
  std::byte* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t head_ = 0;          // published position
  uint64_t cached_tail_ = 0;   // last validated consumer position
  uint64_t pending_head_ = 0;  // end of the reserved record, 0 when none
  absl::Status broken_;        // sticky: a corrupted ring stays unusable
};

class RingConsumer {
 public:
  RingConsumer() = default;
  RingConsumer(void* region, uint64_t capacity);
  RingConsumer(RingConsumer&&) = default;
  RingConsumer& operator=(RingConsumer&&) = default;
  RingConsumer(const RingConsumer&) = delete;
  RingConsumer& operator=(const RingConsumer&) = delete;

  // The next record, or nullopt when the ring is empty. Call Release() before peeking again. The
  // bytes stay valid until Release() but live in shared memory: the producer may change them, so
  // decode by copying. DataLoss when the producer corrupted the ring; it then stays unusable.
  absl::StatusOr<std::optional<std::span<const std::byte>>> TryPeek();
  // As TryPeek, but waits for a record.
  absl::StatusOr<std::span<const std::byte>> Peek(const WaitOptions& options);
  // Frees the record returned by the last Peek; wakes the producer if it waits for room.
  absl::Status Release();

  size_t max_record_size() const { return capacity_ / 2 - sizeof(RecordHeader); }

 private:
  absl::Status Fail(absl::Status status);

  RingControl* control_ = nullptr;
  const std::byte* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t tail_ = 0;         // consumed position (padding included), published by Release
  uint64_t cached_head_ = 0;  // last validated producer position: read again only at tail_
  uint64_t record_end_ = 0;   // end of the peeked record, 0 when none
  absl::Status broken_;
};

}  // namespace tally::ipc
