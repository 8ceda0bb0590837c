// Handshake wire structs, exchanged once over the Unix socket before the shared segment takes
// over: the client's Hello, the server's HelloReply (with the segment's memfd attached).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "common/client_priority.h"
#include "common/slowdown_budget.h"
#include "common/strong_id.h"
#include "ipc/segment.h"

namespace tally::ipc {

inline constexpr uint32_t kHelloMagic = 0x544c5948;  // 'TLYH'
inline constexpr uint32_t kReplyMagic = 0x544c5952;  // 'TLYR'
inline constexpr size_t kCommandSize = 256;

// Frozen for all protocol versions: whatever else changes, any two versions can read each
// other's prefix, so a mismatch is reported by number instead of as garbage.
struct HandshakePrefix {
  uint32_t magic;
  uint32_t protocol_version;
  uint32_t size;  // of the whole struct this prefix starts
  uint32_t reserved;
};

// A ClientPriority as the wire carries it (Hello, ClientStatus).
struct WireClientPriority {
  int32_t level;
  uint32_t is_set;  // 0: the client gave none (scheduled as best-effort)

  static constexpr WireClientPriority From(ClientPriority priority) {
    return {priority.level(), priority.is_set() ? 1u : 0u};
  }
  constexpr ClientPriority ToPriority() const {
    return is_set != 0 ? ClientPriority::Level(level) : ClientPriority::Unset();
  }
};

// A SlowdownBudget as the wire carries it (Hello, ControlRequest, ClientStatus). Its numbers are
// the peer's: check them (SlowdownBudget::Validate) before use.
struct WireSlowdownBudget {
  uint32_t is_set;  // 0: none given (the server's default applies)
  uint32_t reserved;
  double slowdown;
  double percentile;

  static WireSlowdownBudget From(const std::optional<SlowdownBudget>& budget) {
    if (!budget) return {0, 0, 0, 0};
    return {1, 0, budget->slowdown, budget->percentile};
  }
  std::optional<SlowdownBudget> ToBudget() const {
    if (is_set == 0) return std::nullopt;
    return SlowdownBudget{slowdown, percentile};
  }
};

struct Hello {
  HandshakePrefix prefix;
  uint32_t schema_version;  // of the message table above the IPC layer (the CUDA calls)
  int32_t pid;              // as the client sees itself; the server trusts SO_PEERCRED's
  // TALLY_PRIORITY's (older clients send is_set 0: no priority given).
  WireClientPriority client_priority;
  char command[kCommandSize];  // NUL-padded, not necessarily NUL-terminated
  // Device memory the client asks to be limited to (tally-run --memory-limit); 0: no wish. It
  // can only lower the server's limit for the client, never raise it.
  uint64_t memory_limit;
  // TALLY_SLOWDOWN_BUDGET's (tally-run --slowdown-budget); the server refuses one out of range.
  WireSlowdownBudget slowdown_budget;
};

enum class HelloStatus : uint32_t {
  kAccepted = 0,
  kVersionMismatch = 1,
  kSchemaMismatch = 2,
  kRefused = 3,     // the client runs as another user
  kServerFull = 4,  // the server serves as many clients as it may (`reason` says how many)
  // The client waits to be admitted (tally-server --admission wait), `reason` says for what; the
  // final reply follows within `wait_ms`.
  kWaiting = 5,
  kInvalid = 6,  // the hello carries a value the server does not accept (`reason` says which)
};
inline constexpr size_t kReasonSize = 256;

struct HelloReply {
  HandshakePrefix prefix;
  uint32_t status;          // HelloStatus
  uint32_t schema_version;  // the server's
  ClientId client_id;       // the server's name for this client (tally-ctl, logs)
  SegmentLayout layout;     // when accepted; the segment's memfd comes with the reply
  uint64_t wait_ms;         // kWaiting: how long the client may have to wait
  // When refused: why; when accepted: what the client should know (a grant lowered what it
  // asked for), or nothing. NUL-terminated; the client prints it.
  char reason[kReasonSize];
};

// The reply's reason, which the peer may not have terminated.
inline std::string ReasonOf(const HelloReply& reply) {
  return std::string(reply.reason, strnlen(reply.reason, sizeof(reply.reason)));
}

static_assert(std::is_trivially_copyable_v<Hello> && std::is_standard_layout_v<Hello>);
static_assert(std::is_trivially_copyable_v<HelloReply> && std::is_standard_layout_v<HelloReply>);

// A wire struct's bytes, for sending and receiving it whole.
template <typename T>
std::span<std::byte> BytesOf(T& value) {
  return {reinterpret_cast<std::byte*>(&value), sizeof(T)};
}
// The part of a struct after its HandshakePrefix, read once the prefix has been checked.
template <typename T>
std::span<std::byte> BytesAfterPrefix(T& value) {
  return BytesOf(value).subspan(sizeof(HandshakePrefix));
}

}  // namespace tally::ipc
