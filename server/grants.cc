// Grants' sockets and directories (grants.h).
#include "server/grants.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/syscall.h"

namespace tally::server {
namespace {

constexpr std::string_view kSocketName = "server.sock";

// Names become directory names: letters, digits, '-', '_' and '.', not starting with '.'.
absl::Status CheckName(std::string_view name) {
  const bool valid_chars = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
  if (name.empty() || name.size() >= ipc::kGrantNameSize || !valid_chars || name[0] == '.') {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a grant's name has 1 to %d letters, digits, '-', '_' or '.' and does not start with "
        "'.'; '%s' does not",
        ipc::kGrantNameSize - 1, name));
  }
  return absl::OkStatus();
}

// Removes a directory that is empty; a failure is only logged by the caller's caller.
void RemoveDirectory(const std::string& path) {
  ipc::RetryEintr("rmdir", [&] { return rmdir(path.c_str()); }).status().IgnoreError();
}

}  // namespace

ipc::GrantStatus Grant::Status() const {
  ipc::GrantStatus status{};
  ipc::CopyText(ceiling.grant, status.name, sizeof(status.name));
  ipc::CopyText(listener.path(), status.socket, sizeof(status.socket));
  status.client_priority_level = ceiling.max_priority.level();
  status.clients = static_cast<uint32_t>(std::max(clients.load(), 0));
  status.memory_limit = ceiling.memory_limit;
  status.pinned_limit = ceiling.pinned_limit;
  return status;
}

Grants::~Grants() {
  for (const std::shared_ptr<Grant>& grant : grants_) {
    grant->listener.Unlink();
    RemoveDirectory(grant->directory);
  }
  RemoveDirectory(directory_);
}

std::string Grants::DirectoryFor(const std::string& socket_path) {
  std::string stem = socket_path;
  if (stem.ends_with(".sock")) stem.resize(stem.size() - 5);
  return stem + ".grants";
}

absl::Status Grants::MakeDirectory(const std::string& path) const {
  // Those who may connect must reach the socket inside: the mode follows --access.
  const mode_t socket_mode = listen_.access.socket_mode();
  const mode_t mode =
      0700 | ((socket_mode & 0060) != 0 ? 0050 : 0) | ((socket_mode & 0006) != 0 ? 0005 : 0);
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrFormat("mkdir(%s): %s", path, std::strerror(errno)));
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is not a directory of the server's own", path));
  }
  if (const std::optional<gid_t> group = listen_.access.socket_group()) {
    TALLY_RETURN_IF_ERROR(ipc::RetryEintr(absl::StrFormat("chown(%s)", path), [&] {
                            return chown(path.c_str(), static_cast<uid_t>(-1), *group);
                          }).status());
  }
  // mkdir's mode went through the umask; an existing directory may have had another.
  return ipc::RetryEintr(absl::StrFormat("chmod(%s)", path),
                         [&] { return chmod(path.c_str(), mode); })
      .status();
}

absl::StatusOr<std::shared_ptr<Grant>> Grants::Add(ipc::ClientCeiling ceiling) {
  std::lock_guard lock(mutex_);
  if (ceiling.grant.empty()) {
    do {
      ceiling.grant = absl::StrFormat("grant-%d", ++named_);
    } while (std::any_of(grants_.begin(), grants_.end(),
                         [&](const auto& grant) { return grant->ceiling.grant == ceiling.grant; }));
  }
  TALLY_RETURN_IF_ERROR(CheckName(ceiling.grant));
  for (const std::shared_ptr<Grant>& grant : grants_) {
    if (grant->ceiling.grant == ceiling.grant) {
      return absl::AlreadyExistsError(
          absl::StrFormat("there is a grant named '%s' already (its socket is %s)", ceiling.grant,
                          grant->listener.path()));
    }
  }
  TALLY_RETURN_IF_ERROR(MakeDirectory(directory_));
  const std::string directory = absl::StrFormat("%s/%s", directory_, ceiling.grant);
  TALLY_RETURN_IF_ERROR(MakeDirectory(directory));
  ipc::ListenerOptions options = listen_;
  options.path = absl::StrFormat("%s/%s", directory, kSocketName);
  options.ceiling = ceiling;
  absl::StatusOr<ipc::Listener> listener = ipc::Listener::Listen(std::move(options));
  if (!listener.ok()) {
    RemoveDirectory(directory);
    return listener.status();
  }
  auto grant = std::make_shared<Grant>(std::move(ceiling), *std::move(listener), directory);
  grants_.push_back(grant);
  return grant;
}

absl::StatusOr<std::shared_ptr<Grant>> Grants::Revoke(std::string_view name, bool end_clients) {
  std::lock_guard lock(mutex_);
  const auto found = std::find_if(grants_.begin(), grants_.end(),
                                  [&](const auto& grant) { return grant->ceiling.grant == name; });
  if (found == grants_.end()) {
    return absl::NotFoundError(absl::StrFormat("there is no grant named '%s'", name));
  }
  std::shared_ptr<Grant> grant = *found;
  grants_.erase(found);
  grant->listener.Unlink();
  RemoveDirectory(grant->directory);
  if (end_clients) grant->ended = true;
  return grant;
}

std::vector<std::shared_ptr<Grant>> Grants::List() const {
  std::lock_guard lock(mutex_);
  return grants_;
}

}  // namespace tally::server
