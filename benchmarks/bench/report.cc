// Metrics: a job's latency percentiles against the same job alone (queueing included, since
// latency runs from a request's arrival), its throughput normalised to running alone, system
// throughput as the sum of all jobs' normalised throughputs (as the Tally paper counts it), and
// the preemptions with their measured turnaround.
#include "benchmarks/bench/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tally::bench {
namespace {

using nlohmann::ordered_json;

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}
double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

ordered_json LatencyJson(const std::vector<double>& samples) {
  return {{"mean", Mean(samples)},           {"p50", Percentile(samples, 50)},
          {"p95", Percentile(samples, 95)},  {"p99", Percentile(samples, 99)},
          {"max", Percentile(samples, 100)}, {"count", samples.size()}};
}

ordered_json JobJson(const ScenarioJob& job, bool foreground, const JobRun& shared,
                     const JobRun& alone) {
  ordered_json j = {
      {"name", job.name},
      {"priority", job.priority.ToString()},
      {"role", foreground ? "foreground" : "background"},
      {"open_loop", job.arrivals.has_value()},
      {"completed_per_s", shared.completed_per_s},
      {"alone_completed_per_s", alone.completed_per_s},
      {"normalized_throughput", Ratio(shared.completed_per_s, alone.completed_per_s)}};
  if (job.arrivals) {
    j["latency_us"] = LatencyJson(shared.latencies_us);
    j["alone_latency_us"] = LatencyJson(alone.latencies_us);
    j["p99_overhead"] =
        Ratio(Percentile(shared.latencies_us, 99), Percentile(alone.latencies_us, 99)) - 1;
    j["unfinished_requests"] = shared.unfinished;
    j["latencies_us"] = shared.latencies_us;
    j["alone_latencies_us"] = alone.latencies_us;
  }
  return j;
}

std::string Milliseconds(const std::vector<double>& us) {
  std::string out;
  for (double v : us) out += fmt::format("{}{:.2f}", out.empty() ? "" : ", ", v / 1000);
  return out;
}

// Below a live table: the foreground's p99s alone (the noise of a rerun) and the slowdown the
// server's priority-budget policy measured itself.
std::string LiveNotes(const BenchResult& result, const LoadRun& load) {
  std::string out;
  const std::vector<bool> foreground = ForegroundJobs(result.scenario);
  for (size_t j = 0; j < load.alone_p99s_us.size(); ++j) {
    if (!foreground[j] || load.alone_p99s_us[j].size() < 2) continue;
    out += fmt::format("\n{} alone {} times: p99 {} ms (the reference: the median run)",
                       result.scenario.jobs[j].name, load.alone_p99s_us[j].size(),
                       Milliseconds(load.alone_p99s_us[j]));
  }
  if (const std::optional<double> spread = AloneP99Spread(result, load)) {
    out += fmt::format("\nforeground p99 alone, spread (largest / smallest - 1): {:+.1f}%\n",
                       100 * *spread);
  }
  for (const PolicyRun& run : load.runs) {
    if (!run.measured_slowdown) continue;
    out += fmt::format("\n{}: the server's measured slowdown of the foreground {:+.1f}%",
                       run.policy, 100 * *run.measured_slowdown);
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100 * samples.size()));
  return samples[std::clamp<size_t>(rank, 1, samples.size()) - 1];
}

std::vector<PolicySummary> Summarise(const BenchResult& result, const LoadRun& load) {
  const std::vector<bool> foreground = ForegroundJobs(result.scenario);
  std::vector<PolicySummary> out;
  for (const PolicyRun& run : load.runs) {
    PolicySummary s;
    s.policy = run.policy;
    int open = 0;
    for (size_t j = 0; j < run.jobs.size(); ++j) {
      const JobRun& shared = run.jobs[j];
      const JobRun& alone = load.alone[j];
      const double normalized = Ratio(shared.completed_per_s, alone.completed_per_s);
      s.system_throughput += normalized;
      if (!foreground[j]) s.bg_throughput += normalized;
      if (!foreground[j] || !result.scenario.jobs[j].arrivals) continue;
      ++open;
      s.fg_p50_us += Percentile(shared.latencies_us, 50);
      s.fg_p95_us += Percentile(shared.latencies_us, 95);
      s.fg_p99_us += Percentile(shared.latencies_us, 99);
      s.fg_p99_overhead +=
          Ratio(Percentile(shared.latencies_us, 99), Percentile(alone.latencies_us, 99)) - 1;
    }
    if (open > 0) {
      s.fg_p50_us /= open;
      s.fg_p95_us /= open;
      s.fg_p99_us /= open;
      s.fg_p99_overhead /= open;
    }
    s.preemptions = run.preemptions;
    s.turnaround_p99_us = Percentile(run.turnarounds_us, 99);
    out.push_back(s);
  }
  return out;
}

std::optional<double> AloneP99Spread(const BenchResult& result, const LoadRun& load) {
  const std::vector<bool> foreground = ForegroundJobs(result.scenario);
  double sum = 0;
  int jobs = 0;
  for (size_t j = 0; j < load.alone_p99s_us.size(); ++j) {
    const std::vector<double>& p99s = load.alone_p99s_us[j];
    if (!foreground[j] || p99s.size() < 2) continue;
    const auto [low, high] = std::ranges::minmax(p99s);
    sum += Ratio(high, low) - 1;
    ++jobs;
  }
  return jobs > 0 ? std::optional<double>(sum / jobs) : std::nullopt;
}

ordered_json ResultToJson(const BenchResult& result, const std::string& command) {
  const Scenario& sc = result.scenario;
  const std::vector<bool> foreground = ForegroundJobs(sc);
  ordered_json loads = ordered_json::array();
  for (const LoadRun& load : result.loads) {
    const std::vector<PolicySummary> summaries = Summarise(result, load);
    ordered_json runs = ordered_json::array();
    for (size_t r = 0; r < load.runs.size(); ++r) {
      const PolicyRun& run = load.runs[r];
      const PolicySummary& s = summaries[r];
      ordered_json jobs = ordered_json::array();
      for (size_t j = 0; j < run.jobs.size(); ++j) {
        jobs.push_back(JobJson(sc.jobs[j], foreground[j], run.jobs[j], load.alone[j]));
      }
      ordered_json run_json = {{"policy", run.policy},
                               {"foreground_p99_overhead", s.fg_p99_overhead},
                               {"background_throughput", s.bg_throughput},
                               {"system_throughput", s.system_throughput},
                               {"preemptions", run.preemptions},
                               {"turnaround_us", LatencyJson(run.turnarounds_us)},
                               {"turnarounds_us", run.turnarounds_us},
                               {"risky_launches", run.risky_launches},
                               {"events", run.events},
                               {"wall_s", run.wall_s},
                               {"jobs", std::move(jobs)}};
      if (result.mode == "live") {
        run_json["preemption_latency_us"] = {{"mean", run.preemption_latency_mean_us},
                                             {"max", run.preemption_latency_max_us},
                                             {"count", run.preemption_latencies}};
        run_json["profiles_at_start"] = run.profiles_at_start;
        run_json["measured_slowdown"] =
            run.measured_slowdown ? ordered_json(*run.measured_slowdown) : ordered_json(nullptr);
      }
      runs.push_back(std::move(run_json));
    }
    ordered_json load_json = {{"load", load.load}, {"rates_per_s", load.rates}};
    if (result.mode == "live") {
      load_json["alone_p99s_us"] = load.alone_p99s_us;
      const std::optional<double> spread = AloneP99Spread(result, load);
      load_json["foreground_alone_p99_spread"] = spread ? ordered_json(*spread) : ordered_json();
    }
    load_json["runs"] = std::move(runs);
    loads.push_back(std::move(load_json));
  }
  ordered_json jobs = ordered_json::array();
  for (size_t j = 0; j < sc.jobs.size(); ++j) {
    jobs.push_back({{"name", sc.jobs[j].name},
                    {"priority", sc.jobs[j].priority.ToString()},
                    {"role", foreground[j] ? "foreground" : "background"},
                    {"trace", sc.jobs[j].trace},
                    {"command", sc.jobs[j].command},
                    {"arrivals", sc.jobs[j].arrivals
                                     ? std::string(sim::ArrivalKindName(sc.jobs[j].arrivals->kind))
                                     : "closed loop"},
                    {"alone_time_us",
                     std::chrono::duration<double, std::micro>(result.alone_times[j]).count()}});
  }
  return {{"format", "tally-bench result 1"},
          {"command", command},
          {"mode", result.mode},
          {"scenario",
           {{"name", sc.name},
            {"path", sc.path},
            {"description", sc.description},
            {"duration_s", std::chrono::duration<double>(sc.duration).count()},
            {"seed", sc.seed},
            {"alone_runs", sc.alone_runs},
            {"device", result.device},
            {"sm_count", sc.device.sm_count},
            {"server_environment", result.server_environment}}},
          {"policies", result.policies},
          {"jobs", std::move(jobs)},
          {"loads", std::move(loads)}};
}

std::string MarkdownReport(const BenchResult& result) {
  std::string out;
  for (const LoadRun& load : result.loads) {
    out += fmt::format(
        "\n{} at load {:.2f} ({:.1f} s {}):\n\n"
        "| policy | fg p50 (ms) | fg p95 (ms) | fg p99 (ms) | fg p99 overhead | "
        "bg throughput | system throughput | preemptions | turnaround p99 (us) |\n"
        "|---|---|---|---|---|---|---|---|---|\n",
        result.scenario.name, load.load,
        std::chrono::duration<double>(result.scenario.duration).count(),
        result.mode == "live" ? "live on " + result.device : "simulated");
    for (const PolicySummary& s : Summarise(result, load)) {
      out += fmt::format(
          "| {} | {:.3f} | {:.3f} | {:.3f} | {:+.1f}% | {:.2f} | {:.2f} | {} | {:.1f} |\n",
          s.policy, s.fg_p50_us / 1000, s.fg_p95_us / 1000, s.fg_p99_us / 1000,
          100 * s.fg_p99_overhead, s.bg_throughput, s.system_throughput, s.preemptions,
          s.turnaround_p99_us);
    }
    out += LiveNotes(result, load);
  }
  return out;
}

}  // namespace tally::bench
