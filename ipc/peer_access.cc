// Who may connect to a server, and which servers a client trusts (peer_access.h).
#include "ipc/peer_access.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tally::ipc {
namespace {

// getgrnam_r/getpwnam_r with a buffer that grows as they ask.
template <typename Entry, typename Lookup>
absl::StatusOr<std::optional<Entry>> LookUp(Lookup lookup) {
  std::vector<char> buffer(1024);
  while (true) {
    Entry entry{};
    Entry* found = nullptr;
    const int error = lookup(&entry, buffer.data(), buffer.size(), &found);
    if (error == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (error != 0 && error != ENOENT) {
      return absl::InternalError(
          absl::StrFormat("looking up a user or group: %s", std::strerror(error)));
    }
    if (found == nullptr) return std::optional<Entry>();
    return std::optional<Entry>(entry);
  }
}

absl::StatusOr<std::optional<gid_t>> GroupId(const std::string& name) {
  TALLY_ASSIGN_OR_RETURN(auto group, LookUp<group>([&](group* g, char* b, size_t n, group** r) {
                           return getgrnam_r(name.c_str(), g, b, n, r);
                         }));
  if (!group) return std::optional<gid_t>();
  return std::optional<gid_t>(group->gr_gid);
}

absl::StatusOr<std::optional<uid_t>> UserId(const std::string& name) {
  TALLY_ASSIGN_OR_RETURN(auto user, LookUp<passwd>([&](passwd* p, char* b, size_t n, passwd** r) {
                           return getpwnam_r(name.c_str(), p, b, n, r);
                         }));
  if (!user) return std::optional<uid_t>();
  return std::optional<uid_t>(user->pw_uid);
}

// The peer's supplementary groups as they were when it connected (SO_PEERGROUPS, Linux 4.13).
absl::StatusOr<std::vector<gid_t>> PeerGroups(int socket_fd) {
  std::vector<gid_t> groups(64);
  while (true) {
    socklen_t length = groups.size() * sizeof(gid_t);
    if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &length) == 0) {
      groups.resize(length / sizeof(gid_t));
      return groups;
    }
    if (errno == ERANGE && groups.size() < 65536) {
      groups.resize(std::max<size_t>(length / sizeof(gid_t), groups.size() * 2));
      continue;
    }
    return absl::InternalError(
        absl::StrFormat("getsockopt(SO_PEERGROUPS): %s", std::strerror(errno)));
  }
}

}  // namespace

absl::StatusOr<PeerAccess> PeerAccess::Parse(std::string_view text, uid_t owner) {
  if (text == "user") return OwnerOnly(owner);
  if (text == "any") return PeerAccess(Kind::kAny, owner, 0, "");
  if (text.starts_with("group:") && text.size() > 6) {
    const std::string name(text.substr(6));
    TALLY_ASSIGN_OR_RETURN(std::optional<gid_t> gid, GroupId(name));
    if (!gid) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--access %s: this system has no group '%s'", text, name));
    }
    return PeerAccess(Kind::kGroup, owner, *gid, name);
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--access wants user, group:NAME or any, not '%s'", text));
}

absl::StatusOr<bool> PeerAccess::InGroup(int socket_fd, const PeerCredentials& peer) const {
  if (peer.gid == group_) return true;
  TALLY_ASSIGN_OR_RETURN(const std::vector<gid_t> groups, PeerGroups(socket_fd));
  return std::find(groups.begin(), groups.end(), group_) != groups.end();
}

absl::Status PeerAccess::Admit(int socket_fd, const PeerCredentials& peer) const {
  if (peer.uid == owner_ || kind_ == Kind::kAny) return absl::OkStatus();
  if (kind_ == Kind::kGroup) {
    TALLY_ASSIGN_OR_RETURN(const bool member, InGroup(socket_fd, peer));
    if (member) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrFormat(
      "pid %d runs as uid %d, and this server serves %s only", peer.pid, peer.uid, Describe()));
}

mode_t PeerAccess::socket_mode() const {
  switch (kind_) {
    case Kind::kUser:
      return 0600;
    case Kind::kGroup:
      return 0660;
    case Kind::kAny:
      return 0666;
  }
  return 0600;
}

std::optional<gid_t> PeerAccess::socket_group() const {
  if (kind_ == Kind::kGroup) return group_;
  return std::nullopt;
}

std::string PeerAccess::Describe() const {
  switch (kind_) {
    case Kind::kUser:
      return absl::StrFormat("its own user (uid %d)", owner_);
    case Kind::kGroup:
      return absl::StrFormat("members of group %s (gid %d)", group_name_, group_);
    case Kind::kAny:
      return "every local user";
  }
  return "nobody";
}

absl::StatusOr<ServerTrust> ServerTrust::FromEnvironment() {
  ServerTrust trust;
  if (const char* named = std::getenv("TALLY_SERVER_UID"); named != nullptr && *named != '\0') {
    uint32_t uid = 0;
    if (absl::SimpleAtoi(named, &uid)) {
      trust.other = uid;
    } else {
      TALLY_ASSIGN_OR_RETURN(trust.other, UserId(named));
      if (!trust.other) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "TALLY_SERVER_UID=%s is neither a uid nor a user of this system", named));
      }
    }
    trust.other_why = absl::StrFormat("TALLY_SERVER_UID=%s", named);
    return trust;
  }
  TALLY_ASSIGN_OR_RETURN(trust.other, UserId(std::string(kServiceUser)));
  if (trust.other) trust.other_why = absl::StrFormat("the service user %s", kServiceUser);
  return trust;
}

absl::Status ServerTrust::Check(const std::string& path, const PeerCredentials& server) const {
  if (server.uid == own || (other && server.uid == *other)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrFormat(
      "the process listening on %s (pid %d) runs as uid %d, not as us (uid %d)%s; not "
      "connecting (set TALLY_SERVER_UID=%d to trust it)",
      path, server.pid, server.uid, own,
      other ? absl::StrFormat(" nor as %s (uid %d)", other_why, *other) : std::string(),
      server.uid));
}

}  // namespace tally::ipc
