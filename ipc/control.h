// The control connection: tools such as `tally-ctl status` connect to the server's socket like a
// client but open with a ControlRequest instead of a Hello, get one answer on the socket and
// hang up. No segment, no session: asking for the status never counts as a client.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ipc/handshake.h"
#include "ipc/unique_fd.h"

namespace tally::ipc {

inline constexpr uint32_t kControlMagic = 0x544c5943;        // 'TLYC'
inline constexpr uint32_t kControlReplyMagic = 0x544c5954;   // 'TLYT'
inline constexpr uint32_t kMaxReportedClients = 4096;        // bounds what a reader accepts
inline constexpr size_t kControlTextSize = 256;

enum class ControlKind : uint32_t { kStatus = 1 };

struct ControlRequest {
  HandshakePrefix prefix;  // kControlMagic
  uint32_t kind;           // ControlKind
  uint32_t reserved;
};

enum class Backend : uint32_t { kEmulator = 0, kNvidiaDriver = 1 };

// The answer to kStatus, followed by client_count ClientStatus records.
struct StatusReply {
  HandshakePrefix prefix;  // kControlReplyMagic; size = sizeof(StatusReply)
  int32_t server_pid;
  uint32_t backend;  // Backend
  uint32_t client_count;
  uint32_t reserved;
  uint64_t total_memory;  // bytes on the device
  uint64_t free_memory;   // cuMemGetInfo at the time of the answer
  char device_name[kControlTextSize];          // NUL-terminated
  char backend_description[kControlTextSize];  // NUL-terminated: which library and why
};

struct ClientStatus {
  uint64_t client_id;
  int32_t pid;
  int32_t priority;
  uint64_t memory_bytes;     // device memory the client has allocated and not freed
  uint64_t allocations;      // how many allocations that is
  uint64_t queued_commands;  // stream work accepted but not yet issued to the device
  char command[kCommandSize];  // NUL-terminated
};

static_assert(std::is_trivially_copyable_v<ControlRequest> &&
              std::is_standard_layout_v<ControlRequest>);
static_assert(std::is_trivially_copyable_v<StatusReply> && std::is_standard_layout_v<StatusReply>);
static_assert(std::is_trivially_copyable_v<ClientStatus> &&
              std::is_standard_layout_v<ClientStatus>);

// The server's end of a control connection, as Listener::AcceptAny returns it.
class ControlConnection {
 public:
  ControlConnection(UniqueFd socket, ControlKind kind, pid_t pid)
      : socket_(std::move(socket)), kind_(kind), pid_(pid) {}
  ControlKind kind() const { return kind_; }
  pid_t pid() const { return pid_; }
  // Sends the answer to kStatus (prefix and client_count are filled in here). Bounded in time:
  // a peer that does not read cannot hold the caller.
  absl::Status SendStatus(StatusReply reply, std::span<const ClientStatus> clients);

 private:
  UniqueFd socket_;
  ControlKind kind_;
  pid_t pid_;
};

// Copies `text` into a fixed NUL-terminated field, truncating it.
void CopyText(const std::string& text, char* field, size_t field_size);

struct StatusReport {
  StatusReply server;
  std::vector<ClientStatus> clients;
};

// Asks the server on `path` for its status. Unavailable (naming the path) when no server
// answers there; FailedPrecondition for another protocol version.
absl::StatusOr<StatusReport> QueryStatus(const std::string& path,
                                         absl::Duration timeout = absl::Seconds(5),
                                         uid_t expected_server_uid = geteuid());

}  // namespace tally::ipc
