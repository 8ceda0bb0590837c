// Splitting a ring record into message header and payload.
#include "ipc/message.h"

namespace tally::ipc {

absl::StatusOr<ReceivedMessage> ParseMessage(std::span<const std::byte> record) {
  if (record.size() < sizeof(MessageHeader)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("truncated message: %d bytes, a header alone takes %d", record.size(),
                        sizeof(MessageHeader)));
  }
  ReceivedMessage message;
  std::memcpy(&message.header, record.data(), sizeof(MessageHeader));
  message.payload = record.subspan(sizeof(MessageHeader));
  if (message.header.payload_size != message.payload.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("message type %d claims a %d-byte payload but its record holds %d bytes",
                        message.header.type, message.header.payload_size, message.payload.size()));
  }
  return message;
}

absl::Status UnknownMessageType(uint32_t type) {
  return absl::InvalidArgumentError(absl::StrFormat("unknown message type %d", type));
}

}  // namespace tally::ipc
