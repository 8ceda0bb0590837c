// What a reload of tally-server's settings (SIGHUP, with --config) changes: the settings that
// can change while the server runs, and those that differ but take effect only at a restart.
#pragma once

#include <string>
#include <vector>

#include "server/options.h"

namespace tally::server {

struct OptionChanges {
  std::vector<std::string> applied;       // "--max-clients 64 -> 32", in --help's order
  std::vector<std::string> need_restart;  // "--policy priority -> fifo"
};

// How `read` (the options parsed again) differs from `running`.
OptionChanges CompareOptions(const ServerOptions& running, const ServerOptions& read);

}  // namespace tally::server
