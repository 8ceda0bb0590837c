// Where the server's Unix socket lives: $TALLY_SERVER, else $XDG_RUNTIME_DIR/tally/server.sock,
// else /tmp/tally-$UID/server.sock. A default directory must be ours and private: anyone can
// create /tmp/tally-$UID first and wait for our clients there.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tally::ipc {

enum class DirectoryMode {
  kCreate,          // the server: make the default directory (mode 0700) if it is missing
  kCheckIfPresent,  // clients: never create anything; a missing directory means "no server"
};

absl::StatusOr<std::string> ResolveSocketPath(DirectoryMode mode);

// The private per-user directory of the default socket ($XDG_RUNTIME_DIR/tally, else
// /tmp/tally-$UID), also where tally-run keeps its files.
absl::StatusOr<std::string> RuntimeDirectory(DirectoryMode mode);

// Creates `dir` with mode 0700 when asked and missing; then FailedPrecondition unless it is a
// real directory (not a symlink) owned by our effective uid with no group or other access.
absl::Status EnsurePrivateDirectory(const std::string& dir, DirectoryMode mode);

}  // namespace tally::ipc
