// Unix stream socket operations of the handshake, each system call through RetryEintr.
#include "ipc/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/syscall.h"

namespace tally::ipc {
namespace {

// A socket's address. sun_path holds 107 characters; a longer path (a grant's socket in a deep
// run directory) is reached through its directory, opened with O_PATH and named
// /proc/self/fd/N/, which the kernel resolves like any path (unix(7) only bounds the name).
struct SocketAddress {
  sockaddr_un address{};
  UniqueFd directory;  // held open while the address is in use
};

absl::StatusOr<SocketAddress> MakeAddress(const std::string& path) {
  SocketAddress result;
  result.address.sun_family = AF_UNIX;
  std::string name = path;
  const size_t slash = path.rfind('/');
  if (path.size() >= sizeof(result.address.sun_path) && slash != std::string::npos && slash > 0) {
    const std::string directory = path.substr(0, slash);
    TALLY_ASSIGN_OR_RETURN(const int fd, RetryEintr(absl::StrFormat("open(%s)", directory), [&] {
                             return open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
                           }));
    result.directory = UniqueFd(fd);
    name = absl::StrFormat("/proc/self/fd/%d/%s", fd, path.substr(slash + 1));
  }
  if (name.empty() || name.size() >= sizeof(result.address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("socket path '%s' must have 1 to %d characters (or its file name that "
                        "many with /proc/self/fd/N/ before it)",
                        path, sizeof(result.address.sun_path) - 1));
  }
  std::memcpy(result.address.sun_path, name.data(), name.size());
  return result;
}

absl::StatusOr<UniqueFd> NewSocket() {
  TALLY_ASSIGN_OR_RETURN(int fd, RetryEintr("socket(AF_UNIX)", [] {
                           return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                         }));
  return UniqueFd(fd);
}

absl::Status Bind(int fd, const std::string& path, const sockaddr_un& address) {
  return RetryEintr(
             absl::StrFormat("bind(%s)", path),
             [&] { return bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)); })
      .status();
}

absl::Status Connect(int fd, const std::string& path, const sockaddr_un& address) {
  return RetryEintr(absl::StrFormat("connect(%s)", path),
                    [&] {
                      return connect(fd, reinterpret_cast<const sockaddr*>(&address),
                                     sizeof(address));
                    })
      .status();
}

// Leaves `path` alone unless it is a socket that nobody answers on.
absl::Status RemoveStaleSocket(const std::string& path, const sockaddr_un& address) {
  struct stat st {};
  TALLY_RETURN_IF_ERROR(RetryEintr(absl::StrFormat("lstat(%s)", path), [&] {
                          return lstat(path.c_str(), &st);
                        }).status());
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s exists and is not a socket; not replacing it", path));
  }
  TALLY_ASSIGN_OR_RETURN(UniqueFd probe, NewSocket());
  absl::Status answered = Connect(probe.get(), path, address);
  if (answered.ok()) {
    return absl::AlreadyExistsError(
        absl::StrFormat("a Tally server is already listening on %s", path));
  }
  if (ErrnoOf(answered) != ECONNREFUSED) return answered;
  return RetryEintr(absl::StrFormat("unlink(%s)", path), [&] { return unlink(path.c_str()); })
      .status();
}

}  // namespace

absl::StatusOr<UniqueFd> ListenUnix(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(const SocketAddress socket_address, MakeAddress(path));
  const sockaddr_un& address = socket_address.address;
  TALLY_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket());
  absl::Status bound = Bind(fd.get(), path, address);
  if (ErrnoOf(bound) == EADDRINUSE) {
    TALLY_RETURN_IF_ERROR(RemoveStaleSocket(path, address));
    bound = Bind(fd.get(), path, address);
  }
  TALLY_RETURN_IF_ERROR(bound);
  TALLY_RETURN_IF_ERROR(RetryEintr(absl::StrFormat("listen(%s)", path), [&] {
                          return listen(fd.get(), SOMAXCONN);
                        }).status());
  return fd;
}

absl::StatusOr<UniqueFd> ConnectUnix(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(const SocketAddress socket_address, MakeAddress(path));
  const sockaddr_un& address = socket_address.address;
  TALLY_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket());
  absl::Status connected = Connect(fd.get(), path, address);
  if (ErrnoOf(connected) == EACCES) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the socket %s is not open to us (uid %d): the server there serves other users only "
        "(tally-server --access), or the directory is closed to us: %s",
        path, geteuid(), connected.message()));
  }
  if (!connected.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("no Tally server answers on %s (is tally-server running? TALLY_SERVER "
                        "selects another socket): %s",
                        path, connected.message()));
  }
  return fd;
}

absl::StatusOr<UniqueFd> AcceptUnix(int listen_fd) {
  TALLY_ASSIGN_OR_RETURN(int fd, RetryEintr("accept4", [&] {
                           return accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
                         }));
  return UniqueFd(fd);
}

absl::StatusOr<PeerCredentials> GetPeerCredentials(int fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  TALLY_RETURN_IF_ERROR(RetryEintr("getsockopt(SO_PEERCRED)", [&] {
                          return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
                        }).status());
  return PeerCredentials{credentials.pid, credentials.uid, credentials.gid};
}

absl::Status SendAll(int fd, std::span<const std::byte> bytes, int fd_to_pass) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  while (!bytes.empty()) {
    iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    if (fd_to_pass >= 0) {  // only with the first chunk
      message.msg_control = control;
      message.msg_controllen = sizeof(control);
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(header), &fd_to_pass, sizeof(int));
      fd_to_pass = -1;
    }
    TALLY_ASSIGN_OR_RETURN(
        ssize_t sent, RetryEintr("sendmsg", [&] { return sendmsg(fd, &message, MSG_NOSIGNAL); }));
    bytes = bytes.subspan(static_cast<size_t>(sent));
  }
  return absl::OkStatus();
}

namespace {

// Takes the descriptors out of a received message; only one is expected, and only when asked.
absl::Status CollectDescriptors(msghdr& message, UniqueFd* received_fd) {
  absl::Status status;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      UniqueFd owned(fd);  // closed unless kept: a flood of descriptors must not leak
      if (received_fd != nullptr && !received_fd->valid()) {
        *received_fd = std::move(owned);
      } else {
        status = absl::InvalidArgumentError("peer passed an unexpected file descriptor");
      }
    }
  }
  if ((message.msg_flags & MSG_CTRUNC) != 0) {
    status = absl::InvalidArgumentError("peer passed more file descriptors than expected");
  }
  return status;
}

}  // namespace

absl::Status ReceiveExact(int fd, std::span<std::byte> out, absl::Time deadline,
                          UniqueFd* received_fd) {
  while (!out.empty()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("timed out waiting for the peer's handshake");
    }
    pollfd watched{fd, POLLIN, 0};
    const int timeout_ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
    TALLY_ASSIGN_OR_RETURN(
        int ready, RetryEintr("poll(handshake)", [&] { return poll(&watched, 1, timeout_ms); }));
    if (ready == 0) continue;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    iovec io{out.data(), out.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    TALLY_ASSIGN_OR_RETURN(ssize_t got, RetryEintr("recvmsg", [&] {
                             return recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
                           }));
    TALLY_RETURN_IF_ERROR(CollectDescriptors(message, received_fd));
    if (got == 0) {
      return absl::UnavailableError("peer closed the connection during the handshake");
    }
    out = out.subspan(static_cast<size_t>(got));
  }
  return absl::OkStatus();
}

absl::Status CheckPeerAlive(int fd) {
  pollfd watched{fd, POLLRDHUP, 0};
  TALLY_ASSIGN_OR_RETURN(int ready,
                         RetryEintr("poll(liveness)", [&] { return poll(&watched, 1, 0); }));
  if (ready > 0 && (watched.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0) {
    return absl::UnavailableError("the peer process closed its IPC connection (exited or died)");
  }
  return absl::OkStatus();
}

}  // namespace tally::ipc
