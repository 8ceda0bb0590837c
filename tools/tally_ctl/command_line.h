// What every tally-ctl command shares: its error messages with their exit statuses, and the
// server it asks (and whether it trusts it).
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ipc/peer_access.h"

namespace tally::tools {

// How long tally-ctl waits for a server's answer.
inline constexpr absl::Duration kAnswerTimeout = absl::Seconds(5);

// Says what is wrong with the command line; returns exit status 2.
int Usage(const std::string& message);
// Says that the server on `server` did not answer (or refused); returns exit status 1.
int Fail(const std::string& server, const absl::Status& status);

// The server's socket and whom to trust to run it: `given` (--server), else TALLY_SERVER or the
// run directory's only server; TALLY_SERVER_UID's trust. Nullopt after saying why not.
struct Target {
  std::string server;
  ipc::ServerTrust trust;
};
std::optional<Target> ResolveTarget(const std::string& given);

}  // namespace tally::tools
