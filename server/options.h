// tally-server's command line: flags with --help, each with a TALLY_* environment fallback.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/policy.h"

namespace tally::server {

struct ServerOptions {
  bool emulate = false;
  int device = 0;
  std::string socket_path;  // empty: ipc::ResolveSocketPath's default
  std::string emulator_library;
  // --validate: every transformable kernel in this form (kOriginal: normal operation).
  scheduler::LaunchForm validate;
};

// --validate's value: `slice:N` (N >= 1 pieces), `ptb:W` (W >= 1 workers), `preempt` or
// `preempt:W` (PTB preempted at random moments and resumed; without W as many workers as can
// be resident).
absl::StatusOr<scheduler::LaunchForm> ParseValidateForm(std::string_view value);
// "sliced into 4 pieces", ... for the log.
std::string DescribeForm(const scheduler::LaunchForm& form);

// The options, or nullopt when --help was given (the usage has been printed). Flags override
// the environment, which overrides the defaults; `default_emulator_library` is the build's.
absl::StatusOr<std::optional<ServerOptions>> ParseOptions(
    int argc, char** argv, const std::string& default_emulator_library);

}  // namespace tally::server
