// Who may use a server (tally-server --access) and whom a client lets serve it (ServerTrust).
// A server's clients run their CUDA calls with the server's rights and share its device, and a
// client hands its server its data and code: both sides check the other's uid, which the kernel
// records at connect time (SO_PEERCRED, SO_PEERGROUPS) and nobody can forge.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ipc/unix_socket.h"

namespace tally::ipc {

// The server's side: which local users may connect (as clients or with tally-ctl).
class PeerAccess {
 public:
  enum class Kind { kUser, kGroup, kAny };

  // "user" (the server's own uid), "group:NAME" (members of NAME, by primary or supplementary
  // group) or "any" (every local user). InvalidArgument for anything else or an unknown group.
  static absl::StatusOr<PeerAccess> Parse(std::string_view text, uid_t owner = geteuid());
  static PeerAccess OwnerOnly(uid_t owner = geteuid()) {
    return PeerAccess(Kind::kUser, owner, 0, "");
  }

  Kind kind() const { return kind_; }
  uid_t owner() const { return owner_; }
  // OK when the peer on `socket_fd` (whose credentials are `peer`) may connect; otherwise
  // PermissionDenied saying who it is and who is served. The owner always may.
  absl::Status Admit(int socket_fd, const PeerCredentials& peer) const;
  // Changing clients, draining, granting: the server's own uid and root (when admitted) only.
  bool MayAdminister(uid_t uid) const { return uid == owner_ || uid == 0; }
  // What the socket file's mode and group must be for the peers it admits to reach it.
  mode_t socket_mode() const;
  std::optional<gid_t> socket_group() const;
  // "user (uid 1000)", "group tally (gid 998)", "any local user".
  std::string Describe() const;

 private:
  PeerAccess(Kind kind, uid_t owner, gid_t group, std::string group_name)
      : kind_(kind), owner_(owner), group_(group), group_name_(std::move(group_name)) {}
  absl::StatusOr<bool> InGroup(int socket_fd, const PeerCredentials& peer) const;

  Kind kind_;
  uid_t owner_;
  gid_t group_;  // kGroup only
  std::string group_name_;
};

// The client's side: the uids it lets run its server. Its own always; besides, the one that
// TALLY_SERVER_UID names (a number or a user name), else the service user (kServiceUser) when
// that user exists: a server run by the system's service (tally-server@.service) for others.
struct ServerTrust {
  uid_t own = geteuid();
  std::optional<uid_t> other;
  std::string other_why;  // how `other` was configured, for messages

  // InvalidArgument when TALLY_SERVER_UID names no user.
  static absl::StatusOr<ServerTrust> FromEnvironment();
  // OK when `server` (the process listening on `path`) runs as a trusted uid; else
  // PermissionDenied saying what was found and how to trust it.
  absl::Status Check(const std::string& path, const PeerCredentials& server) const;
};

// The system user that tally-server@.service runs as (the sysusers entry creates it).
inline constexpr std::string_view kServiceUser = "tally";

}  // namespace tally::ipc
