// tally-ctl: inspects a running tally-server. `tally-ctl status` asks it (over its socket, with
// a control request that does not count as a client) for its device, backend and clients.
#include <cstdio>
#include <string>
#include <string_view>

#include "ipc/control.h"
#include "ipc/socket_path.h"
#include "tools/tally_ctl/status_format.h"

namespace {

constexpr char kUsage[] =
    "Usage: tally-ctl status [--json] [--server PATH]\n"
    "Shows what a running tally-server serves: its device (name, total and free memory), its\n"
    "backend (the emulator or NVIDIA's driver) and each connected client: id, pid, priority,\n"
    "device memory it has allocated, commands queued but not yet issued, command line.\n\n"
    "  --json         print JSON instead of a table: an object with the keys socket,\n"
    "                 server_pid, device {name, total_memory_bytes, free_memory_bytes},\n"
    "                 backend {kind: \"emulator\"|\"nvidia-driver\", description} and clients\n"
    "                 [{id, pid, command, priority, memory_bytes, allocations, queued_commands}]\n"
    "  --server PATH  the server's socket (default: TALLY_SERVER, else the server's default)\n"
    "  --help         show this help\n\n"
    "Exit status: 0 answered, 1 no server answered (or it answered with an error), 2 usage.\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "tally-ctl: %s (see --help)\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  bool status = false;
  std::string server;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "status" && !status) {
      status = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--server" && i + 1 < argc) {
      server = argv[++i];
    } else if (arg.starts_with("--server=")) {
      server = arg.substr(9);
    } else {
      return Usage("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!status) return Usage("no command given; the command is status");
  if (server.empty()) {
    auto path = tally::ipc::ResolveSocketPath(tally::ipc::DirectoryMode::kCheckIfPresent);
    if (!path.ok()) {
      std::fprintf(stderr, "tally-ctl: no tally-server: %s\n",
                   std::string(path.status().message()).c_str());
      return 1;
    }
    server = *path;
  }
  auto report = tally::ipc::QueryStatus(server);
  if (!report.ok()) {
    std::fprintf(stderr, "tally-ctl: no answer from a tally-server on %s: %s\n", server.c_str(),
                 std::string(report.status().message()).c_str());
    return 1;
  }
  const std::string out = json ? tally::tools::FormatStatusJson(*report, server)
                               : tally::tools::FormatStatusText(*report, server);
  std::fputs(out.c_str(), stdout);
  return 0;
}
