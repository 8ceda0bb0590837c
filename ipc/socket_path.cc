// Socket path resolution and the private-directory check.
#include "ipc/socket_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "ipc/peer_access.h"
#include "ipc/syscall.h"

namespace tally::ipc {
namespace {

// The one socket of the days before one server per device (still found by clients).
constexpr char kLegacySocket[] = "server.sock";

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

namespace {

// Makes `dir` (mode 0700) when asked and missing; then FailedPrecondition unless it is a real
// directory (not a symlink) owned by one of `owners` without any of the `forbidden` mode bits.
// `wanted` says what was expected, for the message.
absl::Status CheckDirectory(const std::string& dir, DirectoryMode mode,
                            std::span<const uid_t> owners, mode_t forbidden,
                            const std::string& wanted) {
  if (mode == DirectoryMode::kCreate) {
    absl::StatusOr<int> made =
        RetryEintr(absl::StrFormat("mkdir(%s)", dir), [&] { return mkdir(dir.c_str(), 0700); });
    if (!made.ok() && ErrnoOf(made.status()) != EEXIST) return made.status();
  }
  struct stat st {};
  absl::StatusOr<int> found =
      RetryEintr(absl::StrFormat("lstat(%s)", dir), [&] { return lstat(dir.c_str(), &st); });
  if (!found.ok()) {
    if (ErrnoOf(found.status()) == ENOENT && mode == DirectoryMode::kCheckIfPresent) {
      return absl::OkStatus();
    }
    return found.status();
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s is not a directory (a symlink or file planted there?)", dir));
  }
  if (std::find(owners.begin(), owners.end(), st.st_uid) == owners.end() ||
      (st.st_mode & forbidden) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s must be %s, but is owned by uid %d with mode %04o; remove it or set TALLY_SERVER", dir,
        wanted, st.st_uid, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EnsurePrivateDirectory(const std::string& dir, DirectoryMode mode) {
  const uid_t owner = geteuid();
  return CheckDirectory(dir, mode, std::span(&owner, 1), 077,
                        absl::StrFormat("owned by uid %d with mode 0700", owner));
}

absl::Status EnsureRunDirectory(const std::string& dir, DirectoryMode mode) {
  std::vector<uid_t> owners{geteuid()};
  if (mode == DirectoryMode::kCheckIfPresent) {
    TALLY_ASSIGN_OR_RETURN(const ServerTrust trust, ServerTrust::FromEnvironment());
    if (trust.other) owners.push_back(*trust.other);
  }
  return CheckDirectory(dir, mode, owners, 022,
                        absl::StrFormat("owned by uid %s and writable by its owner alone",
                                        absl::StrJoin(owners, " or ")));
}

absl::StatusOr<std::string> ResolveSocketPath(DirectoryMode mode) {
  if (std::string explicit_path = Env("TALLY_SERVER"); !explicit_path.empty()) {
    return explicit_path;
  }
  TALLY_ASSIGN_OR_RETURN(const std::string dir, RunDirectory(mode));
  std::vector<std::string> devices;
  for (std::string& socket : ServerSockets(dir)) {
    if (socket != dir + "/" + kLegacySocket) devices.push_back(std::move(socket));
  }
  if (devices.size() == 1) return devices.front();
  if (devices.size() > 1) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%d tally-servers run in %s (%s): pick one with tally-run --device INDEX|UUID|auto, or "
        "name its socket with TALLY_SERVER (tally-ctl, tally-exporter: --server)",
        devices.size(), dir, absl::StrJoin(devices, ", ")));
  }
  return dir + "/" + kLegacySocket;
}

absl::StatusOr<std::string> RunDirectory(DirectoryMode mode) {
  if (std::string dir = Env("TALLY_RUN_DIR"); !dir.empty()) {
    TALLY_RETURN_IF_ERROR(EnsureRunDirectory(dir, mode));
    return dir;
  }
  return RuntimeDirectory(mode);
}

std::string DeviceSocketPath(const std::string& run_dir, const std::string& device_uuid) {
  return run_dir + "/" + device_uuid + ".sock";
}

std::vector<std::string> ServerSockets(const std::string& run_dir) {
  std::vector<std::string> sockets;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, error)) {
    const std::string name = entry.path().filename();
    const bool device_socket = name.starts_with("GPU-") && name.ends_with(".sock");
    if ((device_socket || name == kLegacySocket) && entry.is_socket(error)) {
      sockets.push_back(entry.path());
    }
  }
  std::sort(sockets.begin(), sockets.end());
  return sockets;
}

absl::StatusOr<std::string> RuntimeDirectory(DirectoryMode mode) {
  std::string dir;
  if (std::string runtime = Env("XDG_RUNTIME_DIR"); !runtime.empty()) {
    dir = runtime + "/tally";
  } else {
    dir = absl::StrFormat("/tmp/tally-%d", geteuid());
  }
  TALLY_RETURN_IF_ERROR(EnsurePrivateDirectory(dir, mode));
  return dir;
}

}  // namespace tally::ipc
