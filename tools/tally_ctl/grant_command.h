// tally-ctl grant and revoke: a socket of the server's whose clients get fixed ceilings, for a
// batch system or a device plugin to hand to one job, and its removal.
#pragma once

#include <string>
#include <vector>

namespace tally::tools {

// Runs `grant` or `revoke` (words[0]) with its operands and options (everything after the
// command name, in order); returns tally-ctl's exit status (0 done, 1 refused or no server,
// 2 usage).
int RunGrantCommand(const std::vector<std::string>& args);

}  // namespace tally::tools
