// The simulated runs of a scenario. Open-loop jobs get the same seeded arrivals alone and
// shared, so each latency is compared with the same request stream alone; a closed-loop job's
// alone throughput does not depend on the load and is simulated once.
#include "benchmarks/bench/runner.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "benchmarks/sim/oracle_advisor.h"
#include "benchmarks/sim/simulator.h"
#include "common/status.h"
#include "scheduler/policy.h"

namespace tally::bench {
namespace {

double Seconds(sim::Duration d) { return std::chrono::duration<double>(d).count(); }
double Micros(sim::Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

JobRun ToJobRun(const sim::JobOutcome& outcome, sim::Duration window) {
  JobRun run;
  for (sim::Duration d : outcome.latencies) run.latencies_us.push_back(Micros(d));
  run.unfinished = outcome.requests_unfinished;
  run.completed_per_s = outcome.completed_in_window / Seconds(window);
  return run;
}

}  // namespace

std::vector<PolicyVariant> PolicyVariants(const Scenario& scenario,
                                          const std::vector<std::string>& policies) {
  std::vector<PolicyVariant> variants;
  for (const std::string& name : policies) {
    if (!scheduler::TakesBudgets(name)) {
      variants.push_back({name, name});
      continue;
    }
    for (double budget : scenario.slowdown_budgets) {
      variants.push_back({fmt::format("{} {:g}%", name, budget * 100), name, budget});
    }
  }
  return variants;
}

std::vector<bool> ForegroundJobs(const Scenario& scenario) {
  ClientPriority top = scenario.jobs.front().priority;
  for (const ScenarioJob& job : scenario.jobs) top = std::max(top, job.priority);
  std::vector<bool> foreground;
  for (const ScenarioJob& job : scenario.jobs) foreground.push_back(job.priority == top);
  return foreground;
}

absl::StatusOr<BenchResult> RunSimulated(
    const Scenario& scenario, const std::vector<std::string>& policies,
    const std::function<void(int, int, const std::string&)>& progress) {
  BenchResult result;
  result.scenario = scenario;
  const std::vector<PolicyVariant> variants = PolicyVariants(scenario, policies);
  for (const PolicyVariant& variant : variants) result.policies.push_back(variant.label);
  result.device = scenario.device.name;
  const sim::SimOptions options{
      .device = scenario.device,
      .duration = scenario.duration,
      .drain = std::max(scenario.duration, sim::Duration{std::chrono::seconds(1)})};
  std::vector<sim::JobSpec> base;
  sim::OracleAdvisor advisor(scenario.device, scenario.turnaround_threshold);
  for (size_t j = 0; j < scenario.jobs.size(); ++j) {
    const ScenarioJob& job = scenario.jobs[j];
    if (job.trace.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: job {} has no 'trace': simulated mode runs kernel traces", scenario.path, job.name));
    }
    TALLY_ASSIGN_OR_RETURN(sim::JobTrace trace, sim::LoadTrace(job.trace));
    TALLY_RETURN_IF_ERROR(sim::ValidateTrace(trace, scenario.device));
    for (size_t k = 0; k < trace.kernels.size(); ++k) {
      advisor.Add(sim::SimKernelId(j, k), trace.kernels[k]);
    }
    result.alone_times.push_back(sim::AloneTime(trace, scenario.device));
    base.push_back({.name = job.name,
                    .priority = job.priority,
                    .trace = std::move(trace),
                    .open_loop = job.arrivals.has_value()});
  }
  scheduler::PolicyConfig config{.priority = scenario.priority,
                                 .time_slice = scenario.time_slice,
                                 .tgs = scenario.tgs,
                                 .advisor = &advisor};
  const int steps = static_cast<int>(scenario.loads.size() * (variants.size() + 1));
  int step = 0;
  std::vector<std::optional<JobRun>> closed_alone(base.size());
  for (double load : scenario.loads) {
    LoadRun run;
    run.load = load;
    std::vector<sim::JobSpec> jobs = base;
    for (size_t j = 0; j < jobs.size(); ++j) {
      double rate = 0;
      if (jobs[j].open_loop) {
        sim::ArrivalSpec spec = *scenario.jobs[j].arrivals;
        spec.rate = rate = load / Seconds(result.alone_times[j]);
        jobs[j].arrivals = sim::GenerateArrivals(spec, scenario.duration, scenario.seed + j);
      }
      run.rates.push_back(rate);
    }
    progress(++step, steps, fmt::format("load {:.2f}: each job alone", load));
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (!jobs[j].open_loop && closed_alone[j]) {
        run.alone.push_back(*closed_alone[j]);
        continue;
      }
      auto fifo = scheduler::MakeFifoPolicy();
      TALLY_ASSIGN_OR_RETURN(const sim::SimOutcome alone, sim::Simulate(options, {jobs[j]}, *fifo));
      run.alone.push_back(ToJobRun(alone.jobs[0], scenario.duration));
      if (!jobs[j].open_loop) closed_alone[j] = run.alone.back();
    }
    for (const PolicyVariant& variant : variants) {
      progress(++step, steps, fmt::format("load {:.2f}: {}", load, variant.label));
      config.budget.slowdown = variant.budget;
      TALLY_ASSIGN_OR_RETURN(std::unique_ptr<scheduler::Policy> policy,
                             scheduler::MakePolicy(variant.policy, config));
      const auto start = std::chrono::steady_clock::now();
      TALLY_ASSIGN_OR_RETURN(const sim::SimOutcome outcome, sim::Simulate(options, jobs, *policy));
      PolicyRun policy_run;
      policy_run.policy = variant.label;
      policy_run.wall_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (const sim::JobOutcome& job : outcome.jobs) {
        policy_run.jobs.push_back(ToJobRun(job, scenario.duration));
      }
      policy_run.preemptions = outcome.preemptions;
      for (sim::Duration d : outcome.turnarounds) policy_run.turnarounds_us.push_back(Micros(d));
      policy_run.risky_launches = outcome.risky_launches;
      policy_run.events = outcome.events;
      run.runs.push_back(std::move(policy_run));
    }
    result.loads.push_back(std::move(run));
  }
  return result;
}

}  // namespace tally::bench
