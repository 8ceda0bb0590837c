// Messages on the rings: a fixed MessageHeader, then the payload, which is a trivially copyable
// struct (fixed-width fields, offsets instead of pointers) optionally followed by variable bytes.
// Decoding checks type and size and copies the struct out of shared memory: a peer that rewrites
// the bytes while we read them cannot make two reads of one field disagree.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/spsc_ring.h"

namespace tally::ipc {

// MessageHeader::flags.
inline constexpr uint32_t kFlagOneWay = 1u << 0;  // no response will follow (async calls)
inline constexpr uint32_t kFlagError = 1u << 1;   // a response carrying an error instead of T
// A response whose client has device output waiting (kernel printf, assert messages): the
// client takes it (TakeDeviceOutput) and prints it before the call returns, as CUDA flushes its
// printf buffer at synchronising calls.
inline constexpr uint32_t kFlagDeviceOutput = 1u << 2;

struct MessageHeader {
  uint32_t type;  // the payload's T::kType; 0 is never a valid type
  uint32_t flags;
  uint64_t sequence;      // chosen by the requester, echoed in the response
  uint32_t payload_size;  // bytes after this header: sizeof(T) + tail
  uint32_t reserved;
};
static_assert(sizeof(MessageHeader) == 24 && std::is_trivially_copyable_v<MessageHeader> &&
              std::is_standard_layout_v<MessageHeader>);

// A wire struct: `static constexpr uint32_t kType` (nonzero, unique in its MessageSet) and,
// for messages followed by variable bytes (kernel arguments, names),
// `static constexpr bool kHasTail = true`.
template <typename T>
concept WireMessage = std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T> && requires {
  { T::kType } -> std::convertible_to<uint32_t>;
};

template <typename T>
constexpr bool HasTail() {
  if constexpr (requires { T::kHasTail; }) {
    return T::kHasTail;
  } else {
    return false;
  }
}

// A record split into its header and payload; the payload still points into the ring.
struct ReceivedMessage {
  MessageHeader header;
  std::span<const std::byte> payload;
};

template <WireMessage T>
struct Decoded {
  T fields;
  std::span<const std::byte> tail;  // in shared memory: copy before interpreting
};

// InvalidArgument unless the record holds a header whose payload_size matches the record.
absl::StatusOr<ReceivedMessage> ParseMessage(std::span<const std::byte> record);

// `message` as a T: InvalidArgument for another type, a payload shorter than T, or one longer
// than T when T has no tail.
template <WireMessage T>
absl::StatusOr<Decoded<T>> Decode(const ReceivedMessage& message) {
  const size_t size = message.payload.size();
  if (message.header.type != T::kType) {
    return absl::InvalidArgumentError(absl::StrFormat("message type %d where type %d was expected",
                                                      message.header.type, T::kType));
  }
  if (size < sizeof(T) || (!HasTail<T>() && size != sizeof(T))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("message type %d has a %d-byte payload, expected %s%d", T::kType, size,
                        HasTail<T>() ? "at least " : "", sizeof(T)));
  }
  Decoded<T> decoded;
  std::memcpy(&decoded.fields, message.payload.data(), sizeof(T));
  decoded.tail = message.payload.subspan(sizeof(T));
  return decoded;
}

// For dispatch switches generated from an X-macro table (see testing/example_messages.h): decodes
// `message` as T and calls visitor(header, Decoded<T>), which returns an absl::Status.
template <WireMessage T, typename Visitor>
absl::Status DecodeAndVisit(const ReceivedMessage& message, Visitor&& visitor) {
  TALLY_ASSIGN_OR_RETURN(Decoded<T> decoded, Decode<T>(message));
  return visitor(message.header, decoded);
}

// The error for a type id no table entry has (the `default:` of those switches).
absl::Status UnknownMessageType(uint32_t type);

// Writes header + fields + tail as one record and publishes it (waiting for room per `options`).
template <WireMessage T>
absl::Status PostMessage(RingProducer& ring, uint64_t sequence, uint32_t flags, const T& fields,
                         std::span<const std::byte> tail, const WaitOptions& options) {
  static_assert(T::kType != 0);
  TALLY_CHECK(tail.empty() || HasTail<T>());
  const size_t payload_size = sizeof(T) + tail.size();
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> record,
                         ring.Reserve(sizeof(MessageHeader) + payload_size, options));
  const MessageHeader header{static_cast<uint32_t>(T::kType), flags, sequence,
                             static_cast<uint32_t>(payload_size), 0};
  std::memcpy(record.data(), &header, sizeof(header));
  std::memcpy(record.data() + sizeof(header), &fields, sizeof(T));
  if (!tail.empty()) {
    std::memcpy(record.data() + sizeof(header) + sizeof(T), tail.data(), tail.size());
  }
  return ring.Commit();
}

template <WireMessage T>
absl::Status PostMessage(RingProducer& ring, uint64_t sequence, uint32_t flags, const T& fields,
                         const WaitOptions& options) {
  return PostMessage(ring, sequence, flags, fields, {}, options);
}

}  // namespace tally::ipc
