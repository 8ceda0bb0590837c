// The live runs of a scenario, laid out like the simulated ones (runner.cc): per load each job
// alone, then all jobs under each policy. A load is a fraction of an open-loop job's capacity,
// which live mode measures first: the job alone with a few requests arriving at once, the
// median time between two completions being one request's service time (the smallest of a few
// such runs: calibration.h). The arrivals are
// generated as in sim mode (same generator, same seeds).
#include "benchmarks/bench/live_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>

#include "benchmarks/bench/calibration.h"
#include "benchmarks/bench/live_case.h"
#include "benchmarks/bench/report.h"
#include "common/status.h"

namespace tally::bench {
namespace {

namespace fs = std::filesystem;

constexpr size_t kCalibrationRequests = 10;
constexpr const char* kAlonePolicy = "fifo";
// The policies whose choices come from the profiler. The first runs once with the first load's
// jobs before anything is measured, so that their measured runs find the profiles a
// long-running server would have (the cache every server of the run shares), not an empty cache.
constexpr const char* kProfiledPolicy = "priority";
constexpr std::array<std::string_view, 2> kProfiledPolicies = {kProfiledPolicy, "priority-budget"};

double Seconds(sim::Duration d) { return std::chrono::duration<double>(d).count(); }

// A run's folder under its load's: its label without spaces or '%' ("priority-budget-20").
std::string FolderName(std::string label) {
  std::ranges::replace(label, ' ', '-');
  std::erase(label, '%');
  return label;
}

// A path (resolved against the scenario's folder when it loaded), or a bare name looked up in
// `programs`, then on PATH.
absl::StatusOr<std::string> FindProgram(const std::string& name, const std::string& programs) {
  if (name.find('/') != std::string::npos) return name;
  std::vector<std::string> dirs = {programs};
  const char* path = std::getenv("PATH");
  for (std::string_view rest = path ? path : ""; !rest.empty();) {
    const size_t colon = std::min(rest.find(':'), rest.size());
    dirs.emplace_back(rest.substr(0, colon));
    rest.remove_prefix(std::min(colon + 1, rest.size()));
  }
  for (const std::string& dir : dirs) {
    const fs::path candidate = fs::path(dir) / name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return absl::NotFoundError(
      fmt::format("program '{}' is neither in {} nor on PATH (--programs DIR)", name, programs));
}

absl::StatusOr<std::vector<LiveJob>> LiveJobs(const Scenario& scenario,
                                              const std::string& programs) {
  std::vector<LiveJob> jobs;
  for (const ScenarioJob& job : scenario.jobs) {
    if (job.command.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: job {} has no 'command': live mode runs a program per job",
                      scenario.path, job.name));
    }
    auto program = FindProgram(job.command.front(), programs);
    if (!program.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: job {}: 'command': {}", scenario.path,
                                                    job.name,
                                                    std::string(program.status().message())));
    }
    LiveJob live{.name = job.name, .priority = job.priority, .command = job.command};
    live.command.front() = *program;
    jobs.push_back(std::move(live));
  }
  return jobs;
}

// The job alone under `fifo` in `dir`.
absl::StatusOr<LiveCaseOutcome> RunAlone(const LiveOptions& options, const LiveJob& job,
                                         const fs::path& dir, sim::Duration window) {
  return RunLiveCase(options, {kAlonePolicy, kAlonePolicy}, dir.string(), window, {job});
}

// One request's time alone: kCalibrationRuns runs of kCalibrationRequests requests arriving at
// once, served in turn (calibration.h), in `dir`, `dir`-2 and so on.
absl::StatusOr<sim::Duration> CalibratedServiceTime(const LiveOptions& options, LiveJob job,
                                                    const std::string& dir, sim::Duration window) {
  job.arrival_ms = std::vector<double>(kCalibrationRequests, 0.0);
  std::vector<std::vector<double>> runs;  // each run's latencies, in completion order
  for (int run = 1; run <= kCalibrationRuns; ++run) {
    const std::string run_dir = run == 1 ? dir : fmt::format("{}-{}", dir, run);
    TALLY_ASSIGN_OR_RETURN(const LiveCaseOutcome outcome, RunAlone(options, job, run_dir, window));
    runs.push_back(outcome.run.jobs[0].latencies_us);
  }
  absl::StatusOr<sim::Duration> time = ServiceTime(runs);
  if (!time.ok()) {
    return absl::InternalError(
        fmt::format("job {}: {} (in {})", job.name, std::string(time.status().message()), dir));
  }
  return time;
}

std::vector<double> ArrivalMs(sim::ArrivalSpec spec, double rate, sim::Duration window,
                              uint64_t seed) {
  spec.rate = rate;
  std::vector<double> ms;
  for (sim::Time t : sim::GenerateArrivals(spec, window, seed)) {
    ms.push_back(std::chrono::duration<double, std::milli>(t).count());
  }
  return ms;
}

// Of an open-loop job's runs alone, the one of median p99 (the lower middle one of an even
// count): the reference, so that one unlucky run does not set it.
const JobRun& MedianRun(const std::vector<JobRun>& runs) {
  std::vector<const JobRun*> sorted;
  for (const JobRun& run : runs) sorted.push_back(&run);
  std::ranges::sort(sorted, {},
                    [](const JobRun* run) { return Percentile(run->latencies_us, 99); });
  return *sorted[(sorted.size() - 1) / 2];
}

}  // namespace

absl::StatusOr<BenchResult> RunLive(
    const Scenario& scenario, const std::vector<std::string>& policies,
    const LiveOptions& shared_options,
    const std::function<void(int, int, const std::string&)>& progress) {
  LiveOptions options = shared_options;
  options.profile_cache = (fs::path(options.work_dir) / "profiles.json").string();
  fs::remove(options.profile_cache);
  if (!options.gpu) options.server_environment = EmulatorEnvironment(scenario.emulator);
  const bool warm_up = std::ranges::any_of(policies, [](const std::string& policy) {
    return std::ranges::find(kProfiledPolicies, policy) != kProfiledPolicies.end();
  });
  BenchResult result;
  result.mode = "live";
  result.server_environment = options.server_environment;
  result.scenario = scenario;
  const std::vector<PolicyVariant> variants = PolicyVariants(scenario, policies);
  for (const PolicyVariant& variant : variants) result.policies.push_back(variant.label);
  TALLY_ASSIGN_OR_RETURN(std::vector<LiveJob> jobs, LiveJobs(scenario, options.programs));
  const fs::path work = options.work_dir;
  const sim::Duration window = scenario.duration;
  const auto open_jobs = std::count_if(scenario.jobs.begin(), scenario.jobs.end(),
                                       [](const ScenarioJob& j) { return j.arrivals.has_value(); });
  const bool repeats = scenario.alone_runs > 1 && open_jobs > 0;
  const int steps = static_cast<int>(open_jobs + (warm_up ? 1 : 0) +
                                     scenario.loads.size() * (variants.size() + 1 + repeats));
  int step = 0;
  result.alone_times.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!scenario.jobs[j].arrivals) continue;
    progress(++step, steps,
             fmt::format("{}: one request's time alone (the least of {} runs)", jobs[j].name,
                         kCalibrationRuns));
    TALLY_ASSIGN_OR_RETURN(
        result.alone_times[j],
        CalibratedServiceTime(options, jobs[j], (work / ("calibrate-" + jobs[j].name)).string(),
                              window));
  }
  std::vector<std::optional<JobRun>> closed_alone(jobs.size());
  for (double load : scenario.loads) {
    const fs::path load_dir = work / fmt::format("load{:.2f}", load);
    LoadRun run;
    run.load = load;
    for (size_t j = 0; j < jobs.size(); ++j) {
      double rate = 0;
      if (scenario.jobs[j].arrivals) {
        rate = load / Seconds(result.alone_times[j]);
        jobs[j].arrival_ms = ArrivalMs(*scenario.jobs[j].arrivals, rate, window, scenario.seed + j);
      }
      run.rates.push_back(rate);
    }
    progress(++step, steps, fmt::format("load {:.2f}: each job alone", load));
    std::vector<std::vector<JobRun>> alone_runs(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (closed_alone[j]) continue;
      TALLY_ASSIGN_OR_RETURN(
          const LiveCaseOutcome alone,
          RunAlone(options, jobs[j], load_dir / ("alone-" + jobs[j].name), window));
      result.device = alone.device;
      alone_runs[j].push_back(alone.run.jobs[0]);
      if (jobs[j].arrival_ms) continue;
      closed_alone[j] = alone.run.jobs[0];
      if (closed_alone[j]->completed_per_s > 0) {
        result.alone_times[j] = std::chrono::duration_cast<sim::Duration>(
            std::chrono::duration<double>(1 / closed_alone[j]->completed_per_s));
      }
    }
    if (warm_up && load == scenario.loads.front()) {
      progress(++step, steps, fmt::format("load {:.2f}: {} once to fill the profile cache "
                                          "(not measured)", load, kProfiledPolicy));
      TALLY_RETURN_IF_ERROR(RunLiveCase(options, {kProfiledPolicy, kProfiledPolicy},
                                        (work / "warm-up").string(), window, jobs)
                                .status());
    }
    for (const PolicyVariant& variant : variants) {
      progress(++step, steps, fmt::format("load {:.2f}: {}", load, variant.label));
      TALLY_ASSIGN_OR_RETURN(
          LiveCaseOutcome outcome,
          RunLiveCase(options, variant, (load_dir / FolderName(variant.label)).string(), window,
                      jobs));
      run.runs.push_back(std::move(outcome.run));
    }
    if (repeats) {
      progress(++step, steps,
               fmt::format("load {:.2f}: each open-loop job alone {} more times (the noise)", load,
                           scenario.alone_runs - 1));
    }
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (!jobs[j].arrival_ms) {
        run.alone.push_back(*closed_alone[j]);
        run.alone_p99s_us.emplace_back();
        continue;
      }
      for (int k = 2; k <= scenario.alone_runs; ++k) {
        TALLY_ASSIGN_OR_RETURN(
            const LiveCaseOutcome alone,
            RunAlone(options, jobs[j], load_dir / fmt::format("alone-{}-{}", jobs[j].name, k),
                     window));
        alone_runs[j].push_back(alone.run.jobs[0]);
      }
      run.alone.push_back(MedianRun(alone_runs[j]));
      run.alone_p99s_us.emplace_back();
      for (const JobRun& alone : alone_runs[j]) {
        run.alone_p99s_us.back().push_back(Percentile(alone.latencies_us, 99));
      }
    }
    result.loads.push_back(std::move(run));
  }
  return result;
}

}  // namespace tally::bench
