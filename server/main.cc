// tally-server's entry point: options, signal set-up, run.
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/built_file.h"
#include "common/log.h"
#include "common/status.h"
#include "server/options.h"
#include "server/server.h"

int main(int argc, char** argv) {
  // Blocked before any thread exists (the backend starts some), so that every thread inherits
  // the mask and the signals reach only the server's signalfd.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reload (Server::Reload)
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that dies mid-write must not kill the server.
  signal(SIGPIPE, SIG_IGN);

  const std::string emulator =
      tally::LocateBuiltFile({TALLY_DEFAULT_EMULATOR_LIBRARY, TALLY_BUILD_EXECUTABLE_DIR,
                              TALLY_INSTALLED_EMULATOR_LIBRARY});
  auto options = tally::server::ParseOptions(argc, argv, emulator);
  if (!options.ok()) {
    std::fprintf(stderr, "tally-server: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (!*options) return 0;  // --help
  // On SIGHUP: the same command line and environment, the --config file read again.
  const std::vector<std::string> args(argv, argv + argc);
  auto reread = [args, emulator]() -> absl::StatusOr<tally::server::ServerOptions> {
    std::vector<char*> pointers;
    for (const std::string& arg : args) pointers.push_back(const_cast<char*>(arg.c_str()));
    TALLY_ASSIGN_OR_RETURN(
        std::optional<tally::server::ServerOptions> read,
        tally::server::ParseOptions(static_cast<int>(pointers.size()), pointers.data(), emulator));
    if (!read) return absl::InternalError("--help on a reload");
    return *std::move(read);
  };
  auto server = tally::server::Server::Create(**options, std::move(reread));
  if (!server.ok()) {
    TALLY_LOG_ERROR("tally-server: {}", server.status().ToString());
    return 1;
  }
  const absl::Status status = (*server)->Serve();
  if (!status.ok()) {
    TALLY_LOG_ERROR("tally-server: {}", status.ToString());
    return 1;
  }
  return 0;
}
