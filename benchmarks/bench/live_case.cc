// A live run step by step: server, jobs, READY from each, GO to all, FINISHED from each, the
// server's counters and profiles, EXIT to all, their exit statuses, the server stopped, and the
// jobs' files read. Any failure names the log to read; processes left behind are killed by
// ChildProcess.
#include "benchmarks/bench/live_case.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "benchmarks/bench/child_process.h"
#include "common/status.h"
#include "ipc/control.h"
#include "scheduler/policy.h"

namespace tally::bench {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kStartTimeout = absl::Seconds(120);  // loading modules on the emulator
constexpr absl::Duration kExitTimeout = absl::Seconds(60);

// Socket paths are short (108 bytes at most), so they live in the temporary folder, not `dir`.
std::string PrivateSocket() {
  static std::atomic<int> next{0};
  return (fs::temp_directory_path() / fmt::format("tally-bench-{}-{}.sock", getpid(), next++))
      .string();
}

absl::StatusOr<ChildProcess> StartServer(const LiveOptions& options, const PolicyVariant& policy,
                                         const fs::path& dir, const std::string& socket) {
  std::vector<std::string> argv = {options.server};
  if (!options.gpu) argv.push_back("--emulate");
  const std::string cache =
      options.profile_cache.empty() ? (dir / "profiles.json").string() : options.profile_cache;
  argv.insert(argv.end(), {"--socket", socket, "--policy=" + policy.policy,
                           "--profile-cache=" + cache, "--code-cache=none"});
  if (scheduler::TakesBudgets(policy.policy)) {
    argv.push_back(fmt::format("--slowdown-budget={:g}%", policy.budget * 100));
  }
  TALLY_ASSIGN_OR_RETURN(
      ChildProcess server,
      ChildProcess::Start(argv, (dir / "server.log").string(), false, options.server_environment));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!fs::exists(socket)) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          fmt::format("tally-server did not create {} (log: {})", socket, server.log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return server;
}

struct JobFiles {
  std::string arrivals, latencies, throughput, log;
};

JobFiles FilesOf(const fs::path& dir, const LiveJob& job) {
  const auto file = [&](std::string_view what) {
    return (dir / fmt::format("{}.{}", job.name, what)).string();
  };
  return {file("arrivals"), file("latencies"), file("throughput"), file("log")};
}

std::vector<std::string> JobArgv(const LiveOptions& options, const std::string& socket,
                                 const LiveJob& job, const JobFiles& files, sim::Duration window) {
  std::vector<std::string> argv = {options.run};
  if (job.priority.is_set()) argv.insert(argv.end(), {"--priority", job.priority.ToString()});
  argv.insert(argv.end(), {"--server", socket, "--"});
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  argv.push_back("--handshake");
  if (job.arrival_ms) {
    argv.insert(argv.end(), {"--arrivals", files.arrivals, "--latencies", files.latencies});
  } else {
    argv.insert(argv.end(),
                {"--duration-ms",
                 fmt::format("{:.3f}", std::chrono::duration<double, std::milli>(window).count()),
                 "--throughput", files.throughput});
  }
  return argv;
}

absl::Status WriteArrivals(const std::string& path, const std::vector<double>& arrival_ms) {
  std::ofstream out(path);
  for (double ms : arrival_ms) out << fmt::format("{:.3f}\n", ms);
  out.close();
  if (!out) return absl::InternalError("cannot write " + path);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ReadNumbers(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("the job wrote no {}", path));
  std::vector<double> numbers;
  for (double value; in >> value;) numbers.push_back(value);
  if (!in.eof()) return absl::InvalidArgumentError(fmt::format("{}: not numbers", path));
  return numbers;
}

absl::StatusOr<JobRun> ReadJobRun(const LiveJob& job, const JobFiles& files, sim::Duration window) {
  JobRun run;
  if (job.arrival_ms) {
    TALLY_ASSIGN_OR_RETURN(run.latencies_us, ReadNumbers(files.latencies));
    const std::vector<double>& arrival_ms = *job.arrival_ms;
    if (run.latencies_us.size() > arrival_ms.size()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: more latencies than arrivals", files.latencies));
    }
    run.unfinished = arrival_ms.size() - run.latencies_us.size();
    // Served in arrival order: request i completed at arrival i + latency i. As in sim mode,
    // the throughput counts the requests completed within the window.
    const double window_ms = std::chrono::duration<double, std::milli>(window).count();
    size_t in_window = 0;
    for (size_t i = 0; i < run.latencies_us.size(); ++i) {
      in_window += arrival_ms[i] + run.latencies_us[i] / 1e3 <= window_ms;
    }
    run.completed_per_s = in_window / (window_ms / 1e3);
    return run;
  }
  TALLY_ASSIGN_OR_RETURN(const std::vector<double> rate, ReadNumbers(files.throughput));
  if (rate.size() != 1) {
    return absl::InvalidArgumentError(fmt::format("{}: one number expected", files.throughput));
  }
  run.completed_per_s = rate[0];
  return run;
}

// Preemptions, their latency as the server measured it on the device, and risky launches,
// summed over the clients (this run's jobs are the server's only clients); the largest slowdown
// the policy measured (only foreground clients have one).
absl::Status ReadCounters(const std::string& socket, LiveCaseOutcome& outcome) {
  TALLY_ASSIGN_OR_RETURN(const ipc::StatusReport report, ipc::QueryStatus(socket));
  outcome.device = report.server.device_name;
  PolicyRun& run = outcome.run;
  uint64_t latency_ns = 0, latency_max_ns = 0;
  for (const ipc::ClientStatus& client : report.clients) {
    run.preemptions += client.preemptions;
    run.risky_launches += client.risky_launches;
    run.preemption_latencies += client.preemption_latencies;
    latency_ns += client.preemption_latency_ns_total;
    latency_max_ns = std::max(latency_max_ns, client.preemption_latency_ns_max);
    if (client.measured_slowdown >= 0) {
      run.measured_slowdown = std::max(run.measured_slowdown.value_or(0), client.measured_slowdown);
    }
  }
  if (run.preemption_latencies > 0) {
    run.preemption_latency_mean_us = latency_ns / 1e3 / run.preemption_latencies;
    run.preemption_latency_max_us = latency_max_ns / 1e3;
  }
  TALLY_ASSIGN_OR_RETURN(const std::vector<ipc::ProfileStatus> profiles,
                         ipc::QueryProfiles(socket));
  for (const ipc::ProfileStatus& profile : profiles) {
    if (profile.turnaround_ns >= 0) run.turnarounds_us.push_back(profile.turnaround_ns / 1e3);
  }
  return absl::OkStatus();
}

// `exit` is the process's exit status, as Wait or Terminate answered.
absl::Status CheckExit(const absl::StatusOr<int>& exit, std::string_view what,
                       const ChildProcess& process) {
  TALLY_RETURN_IF_ERROR(exit.status());
  if (*exit != 0) {
    return absl::InternalError(
        fmt::format("{} exited with status {} (log: {})", what, *exit, process.log()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LiveCaseOutcome> RunLiveCase(const LiveOptions& options, const PolicyVariant& policy,
                                            const std::string& dir, sim::Duration window,
                                            const std::vector<LiveJob>& jobs) {
  fs::remove_all(dir);  // no files of an earlier run (nor its private profile cache)
  fs::create_directories(dir);
  const std::string socket = PrivateSocket();
  TALLY_ASSIGN_OR_RETURN(ChildProcess server, StartServer(options, policy, dir, socket));
  std::vector<JobFiles> files;
  std::vector<ChildProcess> processes;
  for (const LiveJob& job : jobs) {
    files.push_back(FilesOf(dir, job));
    if (job.arrival_ms)
      TALLY_RETURN_IF_ERROR(WriteArrivals(files.back().arrivals, *job.arrival_ms));
    TALLY_ASSIGN_OR_RETURN(ChildProcess process,
                           ChildProcess::Start(JobArgv(options, socket, job, files.back(), window),
                                               files.back().log, true));
    processes.push_back(std::move(process));
  }
  for (ChildProcess& process : processes) {
    TALLY_RETURN_IF_ERROR(process.AwaitLine("READY", kStartTimeout));
  }
  TALLY_ASSIGN_OR_RETURN(const std::vector<ipc::ProfileStatus> known, ipc::QueryProfiles(socket));
  const auto start = std::chrono::steady_clock::now();
  for (ChildProcess& process : processes) TALLY_RETURN_IF_ERROR(process.SendLine("GO"));
  // Generous: an overloaded foreground drains its queue after the window.
  const absl::Duration finish_timeout = 20 * absl::FromChrono(window) + absl::Seconds(300);
  for (ChildProcess& process : processes) {
    TALLY_RETURN_IF_ERROR(process.AwaitLine("FINISHED", finish_timeout));
  }
  LiveCaseOutcome outcome;
  outcome.run.policy = policy.label;
  outcome.run.profiles_at_start = known.size();
  outcome.run.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  TALLY_RETURN_IF_ERROR(ReadCounters(socket, outcome));
  for (size_t j = 0; j < jobs.size(); ++j) {
    TALLY_RETURN_IF_ERROR(processes[j].SendLine("EXIT"));
    TALLY_RETURN_IF_ERROR(
        CheckExit(processes[j].Wait(kExitTimeout), "job " + jobs[j].name, processes[j]));
  }
  TALLY_RETURN_IF_ERROR(CheckExit(server.Terminate(kExitTimeout), "tally-server", server));
  for (size_t j = 0; j < jobs.size(); ++j) {
    TALLY_ASSIGN_OR_RETURN(JobRun run, ReadJobRun(jobs[j], files[j], window));
    outcome.run.jobs.push_back(std::move(run));
  }
  return outcome;
}

}  // namespace tally::bench
