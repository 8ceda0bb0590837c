// SPSC record ring: reservation, publication and validated reading.
#include "ipc/spsc_ring.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tally::ipc {
namespace {

constexpr uint64_t kAlign = sizeof(RecordHeader);

constexpr uint64_t RecordSpan(uint64_t payload) {
  return sizeof(RecordHeader) + (payload + kAlign - 1) / kAlign * kAlign;
}

void WriteHeader(std::byte* at, uint32_t size, RecordKind kind) {
  const RecordHeader header{size, static_cast<uint32_t>(kind)};
  std::memcpy(at, &header, sizeof(header));
}

}  // namespace

void InitRing(void* region) { new (region) RingControl{}; }

RingProducer::RingProducer(void* region, uint64_t capacity)
    : control_(static_cast<RingControl*>(region)),
      data_(static_cast<std::byte*>(region) + sizeof(RingControl)),
      capacity_(capacity) {}

uint64_t RingProducer::PaddingBefore(uint64_t record_span) const {
  const uint64_t contiguous = capacity_ - (head_ & (capacity_ - 1));
  return contiguous < record_span ? contiguous : 0;
}

absl::StatusOr<bool> RingProducer::HasRoom(uint64_t needed) {
  if (head_ + needed - cached_tail_ <= capacity_) return true;
  // seq_cst: HasRoom is also the waiting producer's ready() (see WaitUntil).
  const uint64_t tail = control_->tail.load(std::memory_order_seq_cst);
  if (tail > head_ || head_ - tail > capacity_ || tail % kAlign != 0) {
    broken_ = absl::DataLossError(absl::StrFormat(
        "IPC ring: consumer position %d is inconsistent with producer position %d (capacity %d)",
        tail, head_, capacity_));
    return broken_;
  }
  cached_tail_ = tail;
  return head_ + needed - tail <= capacity_;
}

absl::Status RingProducer::CheckUsable(size_t size) const {
  if (!broken_.ok()) return broken_;
  if (size > max_record_size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "IPC record of %d bytes exceeds the ring's limit of %d bytes", size, max_record_size()));
  }
  return absl::OkStatus();
}

uint64_t RingProducer::RoomNeeded(size_t size) const {
  return PaddingBefore(RecordSpan(size)) + RecordSpan(size);
}

std::span<std::byte> RingProducer::Place(size_t size) {
  const uint64_t total = RecordSpan(size);
  const uint64_t padding = PaddingBefore(total);
  uint64_t index = head_ & (capacity_ - 1);
  if (padding != 0) {
    WriteHeader(data_ + index, static_cast<uint32_t>(padding - sizeof(RecordHeader)),
                RecordKind::kPadding);
    index = 0;
  }
  WriteHeader(data_ + index, static_cast<uint32_t>(size), RecordKind::kData);
  pending_head_ = head_ + padding + total;
  return std::span<std::byte>(data_ + index + sizeof(RecordHeader), size);
}

absl::StatusOr<std::span<std::byte>> RingProducer::TryReserve(size_t size) {
  TALLY_RETURN_IF_ERROR(CheckUsable(size));
  TALLY_ASSIGN_OR_RETURN(bool room, HasRoom(RoomNeeded(size)));
  if (!room) return absl::ResourceExhaustedError("IPC ring is full");
  return Place(size);
}

absl::StatusOr<std::span<std::byte>> RingProducer::Reserve(size_t size,
                                                           const WaitOptions& options) {
  TALLY_RETURN_IF_ERROR(CheckUsable(size));
  // Only this thread moves head_, so the room needed stays the same while we wait.
  const uint64_t needed = RoomNeeded(size);
  TALLY_ASSIGN_OR_RETURN(bool room, HasRoom(needed));
  if (!room) {  // a full ring is the steady state of a fast poster: no error Status built here
    TALLY_RETURN_IF_ERROR(WaitUntil(
        [&] {
          absl::StatusOr<bool> has_room = HasRoom(needed);
          return !has_room.ok() || *has_room;
        },
        control_->producer_sleeping, options));
    TALLY_RETURN_IF_ERROR(HasRoom(needed).status());  // the wait also ends on a corrupted tail
  }
  return Place(size);
}

absl::Status RingProducer::Commit() {
  TALLY_CHECK(pending_head_ != 0);
  head_ = std::exchange(pending_head_, 0);
  control_->head.store(head_, std::memory_order_seq_cst);  // seq_cst: see WaitUntil
  return WakeIfSleeping(control_->consumer_sleeping);
}

absl::Status RingProducer::Write(std::span<const std::byte> bytes, const WaitOptions& options) {
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> record, Reserve(bytes.size(), options));
  std::copy(bytes.begin(), bytes.end(), record.begin());  // memcpy is undefined for empty spans
  return Commit();
}

RingConsumer::RingConsumer(void* region, uint64_t capacity)
    : control_(static_cast<RingControl*>(region)),
      data_(static_cast<const std::byte*>(region) + sizeof(RingControl)),
      capacity_(capacity) {}

absl::Status RingConsumer::Fail(absl::Status status) {
  broken_ = status;
  return status;
}

absl::StatusOr<std::optional<std::span<const std::byte>>> RingConsumer::TryPeek() {
  if (!broken_.ok()) return broken_;
  TALLY_CHECK(record_end_ == 0);  // one record at a time: Release() before the next Peek
  if (cached_head_ == tail_) {
    const uint64_t head = control_->head.load(std::memory_order_acquire);
    if (head < tail_ || head - tail_ > capacity_ || head % kAlign != 0) {
      return Fail(absl::DataLossError(absl::StrFormat(
          "IPC ring: producer position %d is inconsistent with consumer position %d (capacity %d)",
          head, tail_, capacity_)));
    }
    cached_head_ = head;
  }
  // Records up to cached_head_ were published before the acquire load that read it.
  while (cached_head_ != tail_) {
    const uint64_t index = tail_ & (capacity_ - 1);
    const uint64_t contiguous = capacity_ - index;
    const uint64_t available = cached_head_ - tail_;
    RecordHeader header;  // copied once: the producer may rewrite the shared bytes at any time
    std::memcpy(&header, data_ + index, sizeof(header));
    if (header.kind == static_cast<uint32_t>(RecordKind::kPadding)) {
      if (header.size != contiguous - sizeof(RecordHeader) || available < contiguous) {
        return Fail(absl::DataLossError(
            absl::StrFormat("IPC ring: malformed padding record at position %d", tail_)));
      }
      tail_ += contiguous;
      continue;
    }
    if (header.kind != static_cast<uint32_t>(RecordKind::kData)) {
      return Fail(absl::DataLossError(absl::StrFormat(
          "IPC ring: unknown record kind 0x%x at position %d", header.kind, tail_)));
    }
    if (header.size > max_record_size() ||
        RecordSpan(header.size) > std::min(contiguous, available)) {
      return Fail(absl::DataLossError(
          absl::StrFormat("IPC ring: record of %d bytes at position %d overruns the published data",
                          header.size, tail_)));
    }
    record_end_ = tail_ + RecordSpan(header.size);
    return std::span<const std::byte>(data_ + index + sizeof(RecordHeader), header.size);
  }
  return std::nullopt;
}

absl::StatusOr<std::span<const std::byte>> RingConsumer::Peek(const WaitOptions& options) {
  while (true) {
    TALLY_ASSIGN_OR_RETURN(std::optional<std::span<const std::byte>> record, TryPeek());
    if (record) return *record;
    TALLY_RETURN_IF_ERROR(
        WaitUntil([&] { return control_->head.load(std::memory_order_seq_cst) != tail_; },
                  control_->consumer_sleeping, options));
  }
}

absl::Status RingConsumer::Release() {
  TALLY_CHECK(record_end_ != 0);
  tail_ = std::exchange(record_end_, 0);
  control_->tail.store(tail_, std::memory_order_seq_cst);  // seq_cst: see WaitUntil
  return WakeIfSleeping(control_->producer_sleeping);
}

}  // namespace tally::ipc
