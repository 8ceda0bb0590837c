// tally-server's command line: flags with --help, each with a TALLY_* environment fallback.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tally::server {

struct ServerOptions {
  bool emulate = false;
  int device = 0;
  std::string socket_path;  // empty: ipc::ResolveSocketPath's default
  std::string emulator_library;
};

// The options, or nullopt when --help was given (the usage has been printed). Flags override
// the environment, which overrides the defaults; `default_emulator_library` is the build's.
absl::StatusOr<std::optional<ServerOptions>> ParseOptions(
    int argc, char** argv, const std::string& default_emulator_library);

}  // namespace tally::server
