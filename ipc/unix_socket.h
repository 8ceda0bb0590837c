// Unix stream sockets for the handshake: listening (replacing only a stale socket), connecting,
// peer credentials, exact reads with a deadline, descriptor passing (SCM_RIGHTS), and the hang-up
// check that makes the open socket each side's liveness signal.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ipc/unique_fd.h"

namespace tally::ipc {

// Binds and listens on `path`. An existing socket there is removed only when nobody answers on
// it (a crashed server's leftover); AlreadyExists when a server does answer.
absl::StatusOr<UniqueFd> ListenUnix(const std::string& path);

// Unavailable (with the path and a hint) when no server listens there.
absl::StatusOr<UniqueFd> ConnectUnix(const std::string& path);

absl::StatusOr<UniqueFd> AcceptUnix(int listen_fd);

struct PeerCredentials {
  pid_t pid;
  uid_t uid;
  gid_t gid;
};
// The peer process as the kernel recorded it at connect time (SO_PEERCRED): unforgeable.
absl::StatusOr<PeerCredentials> GetPeerCredentials(int fd);

// Writes all of `bytes`, passing `fd_to_pass` along with them when >= 0. Never raises SIGPIPE.
absl::Status SendAll(int fd, std::span<const std::byte> bytes, int fd_to_pass = -1);

// Reads exactly out.size() bytes by `deadline`. A descriptor passed along is stored in
// `*received_fd` when given (one at most; any other is closed and reported as an error).
absl::Status ReceiveExact(int fd, std::span<std::byte> out, absl::Time deadline,
                          UniqueFd* received_fd = nullptr);

// Unavailable once the peer closed its end (it exited or crashed); data waiting on the socket
// does not count. Never blocks.
absl::Status CheckPeerAlive(int fd);

}  // namespace tally::ipc
