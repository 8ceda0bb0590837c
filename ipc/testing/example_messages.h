// Example wire messages and their generated dispatch: a miniature of the CUDA call table, used by
// the IPC tests and the round-trip benchmark.
#pragma once

#include <cstdint>

#include "ipc/bulk.h"
#include "ipc/message.h"

namespace tally::ipc::testing {

enum class ExampleType : uint32_t {
#define TALLY_IPC_EXAMPLE_MESSAGE(name, id) k##name = id,
#include "ipc/testing/example_messages.def"
};

struct Ping {
  static constexpr uint32_t kType = static_cast<uint32_t>(ExampleType::kPing);
  uint64_t value;
};

struct Pong {
  static constexpr uint32_t kType = static_cast<uint32_t>(ExampleType::kPong);
  uint64_t value;
};

// Variable-size: the checksum of the bytes that follow the struct.
struct Blob {
  static constexpr uint32_t kType = static_cast<uint32_t>(ExampleType::kBlob);
  static constexpr bool kHasTail = true;
  uint64_t checksum;
};

// A payload in the bulk area and its checksum.
struct BulkChecksum {
  static constexpr uint32_t kType = static_cast<uint32_t>(ExampleType::kBulkChecksum);
  BulkRef block;
  uint64_t checksum;
};

// Calls visitor(header, Decoded<T>) for the example type `message` holds. A duplicate id in the
// table is a compile error (duplicate case label), an unknown id a Status.
template <typename Visitor>
absl::Status DispatchExample(const ReceivedMessage& message, Visitor&& visitor) {
  switch (message.header.type) {
#define TALLY_IPC_EXAMPLE_MESSAGE(name, id) \
  case id:                                  \
    return DecodeAndVisit<name>(message, visitor);
#include "ipc/testing/example_messages.def"
  }
  return UnknownMessageType(message.header.type);
}

// FNV-1a, for checking payloads end to end.
inline uint64_t Checksum(std::span<const std::byte> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) hash = (hash ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
  return hash;
}

}  // namespace tally::ipc::testing
