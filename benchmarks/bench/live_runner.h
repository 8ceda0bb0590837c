// Live mode: real programs through tally-run against a private tally-server per run, on the
// emulated GPU (or NVIDIA's driver). Per load, each job alone under `fifo` (the reference),
// then all jobs together under each policy; every run's files are kept in the work folder.
//
// The contract with a job's program (tests/e2e/priority_jobs speaks it): tally-bench appends
//   --handshake                      print READY once connected and wait for a line (GO); print
//                                    FINISHED when done and wait for a line (EXIT) before exiting
//   open loop:   --arrivals FILE     request times in ms from GO, one a line
//                --latencies FILE    written: each completed request's latency in us, from its
//                                    arrival (queueing included)
//   closed loop: --duration-ms D     work back to back for D ms after GO
//                --throughput FILE   written: work units completed per second
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/bench/runner.h"

namespace tally::bench {

struct LiveOptions {
  std::string server;      // the tally-server binary
  std::string run;         // the tally-run binary
  std::string programs;    // where a bare program name of a job's `command` is looked up first
  bool gpu = false;        // NVIDIA's driver instead of `tally-server --emulate`
  std::string work_dir{};  // server logs, job logs, arrival and latency files, profile caches
  // The --profile-cache of every server of the run; empty: a private one per server run.
  std::string profile_cache{};
  // Variables ("NAME=value") every server of the run gets: the scenario's [emulator] shape.
  std::vector<std::string> server_environment{};
};

absl::StatusOr<BenchResult> RunLive(
    const Scenario& scenario, const std::vector<std::string>& policies, const LiveOptions& options,
    const std::function<void(int step, int steps, const std::string& what)>& progress);

}  // namespace tally::bench
