// Where the servers' Unix sockets live: one per device in the run directory ($TALLY_RUN_DIR,
// else $XDG_RUNTIME_DIR/tally, else /tmp/tally-$UID), named by the device's UUID
// (GPU-<uuid>.sock); $TALLY_SERVER names one explicitly. The directory must be ours and
// private: anyone can create /tmp/tally-$UID first and wait for our clients there.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::ipc {

enum class DirectoryMode {
  kCreate,          // the server: make the default directory (mode 0700) if it is missing
  kCheckIfPresent,  // clients: never create anything; a missing directory means "no server"
};

// The socket a client uses: $TALLY_SERVER; else in the run directory the one server socket
// there (GPU-*.sock), FailedPrecondition naming them when there are several, and when there is
// none the legacy RUN_DIR/server.sock (connecting there says that no server runs).
absl::StatusOr<std::string> ResolveSocketPath(DirectoryMode mode);

// $TALLY_RUN_DIR (EnsureRunDirectory), else RuntimeDirectory.
absl::StatusOr<std::string> RunDirectory(DirectoryMode mode);

// The socket of the device with this UUID (as FormatDeviceUuid writes it) in `run_dir`.
std::string DeviceSocketPath(const std::string& run_dir, const std::string& device_uuid);

// The server sockets in `run_dir` (GPU-*.sock, and the legacy server.sock), sorted by name;
// none when the directory does not exist.
std::vector<std::string> ServerSockets(const std::string& run_dir);

// The private per-user directory of the default socket ($XDG_RUNTIME_DIR/tally, else
// /tmp/tally-$UID), also where tally-run keeps its files.
absl::StatusOr<std::string> RuntimeDirectory(DirectoryMode mode);

// Creates `dir` with mode 0700 when asked and missing; then FailedPrecondition unless it is a
// real directory (not a symlink) owned by our effective uid with no group or other access.
absl::Status EnsurePrivateDirectory(const std::string& dir, DirectoryMode mode);

// A run directory that servers share with their clients (--run-dir, TALLY_RUN_DIR; e.g. the
// service's /run/tally, mode 0750 for group tally): as EnsurePrivateDirectory, but others may
// read and search it (never write: they could plant a socket), and for clients its owner may
// also be the uid they trust to run servers (ServerTrust::FromEnvironment).
absl::Status EnsureRunDirectory(const std::string& dir, DirectoryMode mode);

}  // namespace tally::ipc
