// tally-ctl's shared command-line pieces (command_line.h).
#include "tools/tally_ctl/command_line.h"

#include <cstdio>

#include "ipc/socket_path.h"

namespace tally::tools {

int Usage(const std::string& message) {
  std::fprintf(stderr, "tally-ctl: %s (see --help)\n", message.c_str());
  return 2;
}

int Fail(const std::string& server, const absl::Status& status) {
  std::fprintf(stderr, "tally-ctl: no answer from a tally-server on %s: %s\n", server.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

std::optional<Target> ResolveTarget(const std::string& given) {
  Target target{given, {}};
  if (target.server.empty()) {
    auto path = ipc::ResolveSocketPath(ipc::DirectoryMode::kCheckIfPresent);
    if (!path.ok()) {
      std::fprintf(stderr, "tally-ctl: no tally-server: %s\n",
                   std::string(path.status().message()).c_str());
      return std::nullopt;
    }
    target.server = *path;
  }
  auto trust = ipc::ServerTrust::FromEnvironment();
  if (!trust.ok()) {
    Fail(target.server, trust.status());
    return std::nullopt;
  }
  target.trust = *std::move(trust);
  return target;
}

}  // namespace tally::tools
