// One live run: a private tally-server with one policy and the given jobs through tally-run,
// started together (each prints READY, then all get GO), measured, and stopped. The server's
// counters are read while the jobs are still connected.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/bench/live_runner.h"
#include "benchmarks/bench/runner.h"
#include "common/client_priority.h"

namespace tally::bench {

struct LiveJob {
  std::string name;
  ClientPriority priority;
  std::vector<std::string> command;                 // the program's path, then its arguments
  std::optional<std::vector<double>> arrival_ms{};  // open loop; absent: closed loop
};

struct LiveCaseOutcome {
  PolicyRun run;       // the jobs in the order given
  std::string device;  // as the server names it
};

// `policy` is the server's --policy (and, for priority-budget, its --slowdown-budget: the budget
// of clients that give none), its label the run's. `dir` (emptied first) keeps the server's log
// and socket, its private profile cache (unless `options` names a shared one) and each job's log
// and files; `window` is the closed-loop jobs' working time.
absl::StatusOr<LiveCaseOutcome> RunLiveCase(const LiveOptions& options, const PolicyVariant& policy,
                                            const std::string& dir, sim::Duration window,
                                            const std::vector<LiveJob>& jobs);

}  // namespace tally::bench
