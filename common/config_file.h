// Configuration files (tally-server --config, tally-device-plugin --config): lines of NAME=VALUE
// with the names of the program's environment variables (TALLY_MAX_CLIENTS=32), as systemd's
// EnvironmentFile= reads them, so that one file can serve both; blank lines and lines starting
// with # are skipped, and a value may be quoted with " or '.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally {

struct ConfigEntry {
  int line = 0;  // 1-based, for messages
  std::string name;
  std::string value;
};

// The entries of `text`, or InvalidArgument naming `path` and the line of the first bad one.
absl::StatusOr<std::vector<ConfigEntry>> ParseConfig(const std::string& path,
                                                     const std::string& text);
// Reads and parses the file at `path`.
absl::StatusOr<std::vector<ConfigEntry>> ReadConfigFile(const std::string& path);

}  // namespace tally
