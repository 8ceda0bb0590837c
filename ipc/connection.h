// Both ends of a client-server connection after the handshake: the Unix socket (kept open as the
// liveness signal), the shared segment, the two rings and the bulk area. The server's Listener
// accepts connections; the client shim calls ClientConnection::Connect once per process.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/client_priority.h"
#include "ipc/bulk.h"
#include "ipc/control.h"
#include "ipc/peer_access.h"
#include "ipc/segment.h"
#include "ipc/spsc_ring.h"
#include "ipc/unique_fd.h"
#include "ipc/wait.h"

namespace tally::ipc {

// WaitOptions whose waits end with Unavailable soon after the peer on `socket_fd` hangs up.
// It holds a std::function: on a hot path build it once and reuse it.
WaitOptions WaitOptionsFor(int socket_fd, absl::Duration timeout);

// Who is on the other end, as the server knows it.
struct ClientInfo {
  ClientId client_id;
  pid_t pid = 0;  // from SO_PEERCRED, not from the hello
  uid_t uid = 0;
  ClientPriority priority = ClientPriority::Unset();
  std::string command;
  // As the client asked (Hello::memory_limit; 0: no wish), lowered to its grant's limit.
  uint64_t memory_limit = 0;
  uint64_t pinned_limit = kNoLimit;  // its grant's, kNoLimit without one
  std::string grant;                 // the name of the grant it connected through, or empty
  // As the client asked (checked); none: the server's default applies.
  std::optional<SlowdownBudget> slowdown_budget = std::nullopt;
};

// Applies the ceiling to what the client asked; the text says what was lowered and why (empty
// when nothing was), for the client to print.
std::string ApplyCeiling(const ClientCeiling& ceiling, ClientInfo& client);

// The server's end. Not thread-safe: one thread serves one client's rings at a time.
class ServerConnection {
 public:
  const ClientInfo& client() const { return client_; }
  RingConsumer& requests() { return requests_; }
  RingProducer& responses() { return responses_; }
  RingProducer& callbacks() { return callbacks_; }
  const BulkArea& bulk() const { return bulk_; }
  // The client's page-locked memory, at the same address in both processes.
  absl::StatusOr<std::span<std::byte>> host_region() const { return segment_.host_region(); }
  // For the server's poll/epoll loop: POLLHUP/POLLRDHUP there means the client is gone.
  int socket_fd() const { return socket_.get(); }
  absl::Status CheckPeerAlive() const;
  WaitOptions MakeWaitOptions(absl::Duration timeout) const {
    return WaitOptionsFor(socket_.get(), timeout);
  }

 private:
  friend class Listener;
  ServerConnection(UniqueFd socket, Segment segment, ClientInfo client);

  UniqueFd socket_;
  Segment segment_;
  RingConsumer requests_;
  RingProducer responses_;
  RingProducer callbacks_;
  BulkArea bulk_;
  ClientInfo client_;
};

struct ListenerOptions {
  std::string path;  // see ResolveSocketPath
  uint32_t schema_version = 0;
  SegmentConfig segment;
  // How long Accept waits for a connected client's hello.
  absl::Duration handshake_timeout = absl::Seconds(5);
  // Who is served (tally-server --access); others are refused: their CUDA calls would run with
  // our rights. The socket file's mode and group follow it.
  PeerAccess access = PeerAccess::OwnerOnly();
  // A grant's socket: its clients get the ceiling, and control requests are refused there.
  std::optional<ClientCeiling> ceiling;
  // What an accepted client should know about how it will be served (e.g. that the policy
  // ignores its slowdown budget), sent with the reply for it to print beside the ceiling's
  // text; empty text or no function: nothing. Called on the handshake's thread.
  std::function<std::string(const ClientInfo&)> notice;
  // Shared by the listeners of one server so that client ids stay unique across them; null: the
  // listener counts on its own.
  std::shared_ptr<std::atomic<uint64_t>> next_client_id;
};

// A peer that connected and whose handshake has not run yet (Listener::AcceptPeer).
struct PendingPeer {
  UniqueFd socket;
  pid_t pid = 0;  // SO_PEERCRED
  uid_t uid = 0;
  gid_t gid = 0;
  ClientId client_id;  // the name the peer gets if it turns out to be a client
};

// What an admission decision may do with a client that has to wait for its place.
struct AdmissionWait {
  // Tells the client what it waits for and for how long at most (HelloStatus::kWaiting; once).
  std::function<absl::Status(const std::string& reason, absl::Duration at_most)> tell;
  std::function<bool()> gone;  // whether the client has hung up
};

// Decides whether a client whose hello was valid may connect: an empty string admits it, any
// other text refuses it with that reason (HelloStatus::kServerFull), which the client prints. It
// may block while the client waits (telling it so first).
using Admission = std::function<std::string(const ClientInfo&, const AdmissionWait&)>;

class Listener {
 public:
  // Listens on options.path, replacing a stale socket but never a live server's.
  static absl::StatusOr<Listener> Listen(ListenerOptions options);
  Listener(Listener&&) noexcept = default;
  Listener& operator=(Listener&&) noexcept = default;
  // Removes the socket file if it is still ours.
  ~Listener();
  // Removes the socket file now if it is still ours (new peers cannot connect), while the
  // descriptor stays open until the listener is destroyed.
  void Unlink() const;

  // Readable when a client is connecting (for the server's poll loop).
  int fd() const { return fd_.get(); }
  const std::string& path() const { return options_.path; }

  // Accepts the next peer without reading from it, so that a peer that never speaks cannot
  // hold the caller (the server's accept loop); Handshake then runs on another thread.
  absl::StatusOr<PendingPeer> AcceptPeer();
  // The handshake with an accepted peer, bounded by the handshake timeout: a client (Hello) or a
  // control request (ControlRequest, e.g. tally-ctl). `admit` (may be empty: everyone) is asked
  // about clients only. An error concerns that peer only (wrong uid, version or schema mismatch,
  // refusal, timeout): log it and keep accepting. Safe to call on several threads at once.
  absl::StatusOr<std::variant<ServerConnection, ControlConnection>> Handshake(
      PendingPeer peer, const Admission& admit = {}) const;
  // Why a control request may not be answered here (empty: it may): grant sockets serve jobs
  // only, and only the server's administrators (PeerAccess::MayAdminister) change things.
  std::string RefuseControl(const ControlConnection& control) const;
  // AcceptPeer + Handshake on the calling thread.
  absl::StatusOr<std::variant<ServerConnection, ControlConnection>> AcceptAny();
  // As AcceptAny, for a listener that serves clients only: a control request is an error.
  absl::StatusOr<ServerConnection> Accept();

 private:
  Listener(ListenerOptions options, UniqueFd fd, dev_t dev, ino_t ino)
      : options_(std::move(options)), fd_(std::move(fd)), dev_(dev), ino_(ino) {}

  ListenerOptions options_;
  UniqueFd fd_;
  dev_t dev_ = 0;  // identity of the socket file we bound
  ino_t ino_ = 0;
};

struct ConnectOptions {
  std::string path;  // see ResolveSocketPath
  uint32_t schema_version = 0;
  ClientPriority priority = ClientPriority::Unset();
  std::string command;  // truncated to kCommandSize - 1 bytes
  uint64_t memory_limit = 0;  // Hello::memory_limit
  std::optional<SlowdownBudget> slowdown_budget;  // Hello::slowdown_budget
  absl::Duration handshake_timeout = absl::Seconds(5);
  // Who may run the server: our calls and data must not go to another user's process unless
  // we were told to trust it.
  ServerTrust trust;
  // Called with what the server makes us wait for before admitting us (HelloStatus::kWaiting);
  // the wait is bounded by what the server says plus handshake_timeout.
  std::function<void(const std::string&)> on_wait;
};

// The client's end. Not thread-safe: the shim serialises its host threads around the rings (the
// bulk allocator alone is thread-safe).
class ClientConnection {
 public:
  static absl::StatusOr<ClientConnection> Connect(const ConnectOptions& options);

  ClientId client_id() const { return client_id_; }
  // What the server said when it accepted us (e.g. a grant lowered what we asked for), for the
  // user; empty when nothing.
  const std::string& notice() const { return notice_; }
  RingProducer& requests() { return requests_; }
  RingConsumer& responses() { return responses_; }
  RingConsumer& callbacks() { return callbacks_; }
  BulkAllocator& bulk() { return *bulk_allocator_; }
  // Page-locked memory at the address the server chose (an error when it is taken here).
  absl::StatusOr<std::span<std::byte>> host_region() const { return segment_.host_region(); }
  // Segment::MapHostRegionAlias.
  absl::Status MapHostRegionAlias(void* at, uint64_t address, size_t size, int prot) const {
    return segment_.MapHostRegionAlias(at, address, size, prot);
  }
  int socket_fd() const { return socket_.get(); }
  absl::Status CheckPeerAlive() const;
  WaitOptions MakeWaitOptions(absl::Duration timeout) const {
    return WaitOptionsFor(socket_.get(), timeout);
  }

 private:
  ClientConnection(UniqueFd socket, Segment segment, std::unique_ptr<BulkAllocator> bulk,
                   ClientId client_id);

  UniqueFd socket_;
  Segment segment_;
  RingProducer requests_;
  RingConsumer responses_;
  RingConsumer callbacks_;
  std::unique_ptr<BulkAllocator> bulk_allocator_;
  ClientId client_id_;
  std::string notice_;
};

}  // namespace tally::ipc
