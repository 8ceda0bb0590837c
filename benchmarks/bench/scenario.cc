// Reads scenario files with toml11. Every key is checked against the known ones, numbers may be
// written as integers or decimals, and paths are relative to the scenario file. Every mistake is
// reported at its line and column (of the value, or of the table that lacks a key).
#include "benchmarks/bench/scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <toml.hpp>

#include "common/status.h"

namespace tally::bench {
namespace {

using Table = toml::value;

// A mistake in `at` (a value, or the table a key is missing from): "LINE:COLUMN: message".
absl::Status Invalid(const Table& at, std::string_view message) {
  const toml::source_location where(at.location());
  return absl::InvalidArgumentError(
      fmt::format("{}:{}: {}", where.line(), where.column(), message));
}

// The value of `key`, or the table itself where the key is not given.
const Table& ValueOr(const Table& table, const std::string& key) {
  return table.contains(key) ? table.at(key) : table;
}

absl::Status CheckKeys(const Table& table, const std::set<std::string>& known,
                       std::string_view where) {
  for (const auto& [key, value] : table.as_table()) {
    if (!known.contains(key))
      return Invalid(value, fmt::format("{}: unknown key '{}'", where, key));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Number(const Table& table, const std::string& key, double fallback) {
  if (!table.contains(key)) return fallback;
  const Table& v = table.at(key);
  if (v.is_integer()) return static_cast<double>(v.as_integer());
  if (v.is_floating()) return v.as_floating();
  return Invalid(v, fmt::format("'{}' must be a number", key));
}

sim::Duration Micros(double us) {
  return std::chrono::duration_cast<sim::Duration>(std::chrono::duration<double, std::micro>(us));
}
double ToMicros(sim::Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// A duration key in `unit` microseconds, e.g. ("launch_latency_us", 1) or ("slice_ms", 1000).
absl::Status ReadDuration(const Table& table, const std::string& key, double unit,
                          sim::Duration& out) {
  TALLY_ASSIGN_OR_RETURN(const double value, Number(table, key, ToMicros(out) / unit));
  if (!(value >= 0)) return Invalid(ValueOr(table, key), fmt::format("'{}' must be >= 0", key));
  out = Micros(value * unit);
  return absl::OkStatus();
}

absl::Status ReadDevice(const Table& t, sim::DeviceSpec& d) {
  TALLY_RETURN_IF_ERROR(CheckKeys(
      t,
      {"name", "sm_count", "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
       "shared_bytes_per_sm", "launch_latency_us", "completion_latency_us", "preempt_latency_us"},
      "[device]"));
  d.name = toml::find_or<std::string>(t, "name", d.name);
  for (auto [key, field] : {std::pair{"sm_count", &d.sm_count},
                            {"max_threads_per_sm", &d.max_threads_per_sm},
                            {"max_blocks_per_sm", &d.max_blocks_per_sm},
                            {"registers_per_sm", &d.registers_per_sm},
                            {"shared_bytes_per_sm", &d.shared_bytes_per_sm}}) {
    TALLY_ASSIGN_OR_RETURN(const double value, Number(t, key, *field));
    if (!(value >= 1)) return Invalid(ValueOr(t, key), fmt::format("'{}' must be >= 1", key));
    *field = static_cast<uint32_t>(value);
  }
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "launch_latency_us", 1, d.launch_latency));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "completion_latency_us", 1, d.completion_latency));
  return ReadDuration(t, "preempt_latency_us", 1, d.preempt_latency);
}

// The emulator's own limits for both variables (emulator/internal/config.cc).
constexpr uint32_t kMaxEmulatedSms = 1024;

absl::StatusOr<std::optional<uint32_t>> WholeNumber(const Table& t, const std::string& key,
                                                    uint32_t max) {
  if (!t.contains(key)) return std::nullopt;
  const Table& value = t.at(key);
  if (!value.is_integer() || value.as_integer() < 1 || value.as_integer() > max) {
    return Invalid(value,
                   fmt::format("[emulator]: '{}' must be a whole number from 1 to {}", key, max));
  }
  return static_cast<uint32_t>(value.as_integer());
}

absl::Status ReadEmulator(const Table& t, EmulatedDevice& d) {
  TALLY_RETURN_IF_ERROR(CheckKeys(t, {"sm_count", "host_threads"}, "[emulator]"));
  TALLY_ASSIGN_OR_RETURN(d.sm_count, WholeNumber(t, "sm_count", kMaxEmulatedSms));
  TALLY_ASSIGN_OR_RETURN(d.host_threads, WholeNumber(t, "host_threads", kMaxEmulatedSms));
  // Each host thread runs whole SMs; the emulator would quietly start fewer.
  if (d.sm_count && d.host_threads && *d.host_threads > *d.sm_count) {
    return Invalid(t.at("host_threads"),
                   fmt::format("[emulator]: 'host_threads' ({}) must not exceed 'sm_count' ({}): "
                               "each host thread runs whole SMs",
                               *d.host_threads, *d.sm_count));
  }
  return absl::OkStatus();
}

absl::Status ReadPolicySettings(const Table& t, Scenario& s) {
  TALLY_RETURN_IF_ERROR(
      CheckKeys(t,
                {"min_idle_us", "long_idle_ms", "turnaround_us", "time_slice_ms",
                 "time_slice_in_flight", "tgs_sample_ms", "tgs_budget_ms", "slowdown_budgets"},
                "[policy]"));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "min_idle_us", 1, s.priority.min_idle));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "long_idle_ms", 1000, s.priority.long_idle));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "turnaround_us", 1, s.turnaround_threshold));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "time_slice_ms", 1000, s.time_slice.slice));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "tgs_sample_ms", 1000, s.tgs.sample_period));
  TALLY_RETURN_IF_ERROR(ReadDuration(t, "tgs_budget_ms", 1000, s.tgs.budget_period));
  TALLY_ASSIGN_OR_RETURN(const double in_flight,
                         Number(t, "time_slice_in_flight", s.time_slice.max_in_flight));
  if (!(in_flight >= 1)) {
    return Invalid(ValueOr(t, "time_slice_in_flight"), "'time_slice_in_flight' must be >= 1");
  }
  s.time_slice.max_in_flight = static_cast<uint32_t>(in_flight);
  if (t.contains("slowdown_budgets")) {
    const Table& budgets = t.at("slowdown_budgets");
    s.slowdown_budgets = toml::get<std::vector<double>>(budgets);
    if (s.slowdown_budgets.empty()) return Invalid(budgets, "'slowdown_budgets' must not be empty");
    for (size_t i = 0; i < s.slowdown_budgets.size(); ++i) {
      const double budget = s.slowdown_budgets[i];
      if (!(budget >= 0 && budget <= 10)) {
        return Invalid(
            budgets.as_array()[i],
            fmt::format("'slowdown_budgets': {} is not between 0 and 10 (1000%)", budget));
      }
    }
  }
  return absl::OkStatus();
}

// `command`: a non-empty array of strings. A program given as a relative path (with a '/') is
// relative to the scenario's folder; a bare name is looked up when live mode runs.
absl::StatusOr<std::vector<std::string>> ReadCommand(const Table& t, const std::string& job,
                                                     const std::filesystem::path& dir) {
  if (!t.contains("command")) return std::vector<std::string>{};
  const Table& value = t.at("command");
  const auto is_string = [](const Table& word) { return word.is_string(); };
  if (!value.is_array() || value.as_array().empty() ||
      !std::all_of(value.as_array().begin(), value.as_array().end(), is_string)) {
    return Invalid(value, fmt::format("job {}: 'command' must be a non-empty array of strings: "
                                      "the program and its arguments",
                                      job));
  }
  std::vector<std::string> command;
  for (const Table& word : value.as_array()) command.push_back(word.as_string());
  const std::filesystem::path program = command.front();
  if (program.is_relative() && command.front().find('/') != std::string::npos) {
    command.front() = (dir / program).lexically_normal().string();
  }
  return command;
}

absl::StatusOr<ScenarioJob> ReadJob(const Table& t, size_t index,
                                    const std::filesystem::path& dir) {
  const std::string where = fmt::format("job {}", index + 1);
  TALLY_RETURN_IF_ERROR(CheckKeys(t,
                                  {"name", "priority", "trace", "command", "arrivals",
                                   "burst_on_ms", "burst_off_ms", "bucket_ms", "sigma"},
                                  where));
  ScenarioJob job;
  job.name = toml::find_or<std::string>(t, "name", "");
  if (job.name.empty()) return Invalid(ValueOr(t, "name"), where + ": 'name' is required");
  auto priority = ClientPriority::Parse(toml::find_or<std::string>(t, "priority", ""));
  if (!priority.ok()) {
    return Invalid(ValueOr(t, "priority"),
                   fmt::format("job {}: {}", job.name, std::string(priority.status().message())));
  }
  job.priority = *priority;
  const std::string trace = toml::find_or<std::string>(t, "trace", "");
  if (!trace.empty()) job.trace = (dir / trace).lexically_normal().string();
  TALLY_ASSIGN_OR_RETURN(job.command, ReadCommand(t, job.name, dir));
  if (t.contains("arrivals")) {
    auto kind = sim::ParseArrivalKind(toml::find<std::string>(t, "arrivals"));
    if (!kind.ok()) {
      return Invalid(t.at("arrivals"),
                     fmt::format("job {}: {}", job.name, std::string(kind.status().message())));
    }
    sim::ArrivalSpec spec{.kind = *kind};
    TALLY_RETURN_IF_ERROR(ReadDuration(t, "burst_on_ms", 1000, spec.on_mean));
    TALLY_RETURN_IF_ERROR(ReadDuration(t, "burst_off_ms", 1000, spec.off_mean));
    TALLY_RETURN_IF_ERROR(ReadDuration(t, "bucket_ms", 1000, spec.bucket));
    TALLY_ASSIGN_OR_RETURN(spec.sigma, Number(t, "sigma", spec.sigma));
    job.arrivals = spec;
  }
  return job;
}

absl::StatusOr<Scenario> Parse(const Table& data, const std::string& path) {
  TALLY_RETURN_IF_ERROR(CheckKeys(data,
                                  {"name", "description", "duration_s", "seed", "policies", "loads",
                                   "alone_runs", "device", "emulator", "policy", "jobs"},
                                  "scenario"));
  Scenario s;
  s.path = path;
  s.name = toml::find_or<std::string>(data, "name", std::filesystem::path(path).stem().string());
  s.description = toml::find_or<std::string>(data, "description", "");
  TALLY_RETURN_IF_ERROR(ReadDuration(data, "duration_s", 1e6, s.duration));
  if (s.duration <= sim::Duration{0}) {
    return Invalid(ValueOr(data, "duration_s"), "'duration_s' must be > 0");
  }
  TALLY_ASSIGN_OR_RETURN(const double seed, Number(data, "seed", 1));
  s.seed = static_cast<uint64_t>(seed);
  s.policies = toml::find_or<std::vector<std::string>>(data, "policies", {});
  if (data.contains("loads")) {
    s.loads.clear();
    for (const Table& v : data.at("loads").as_array()) {
      const double load = v.is_integer() ? static_cast<double>(v.as_integer()) : v.as_floating();
      if (!(load > 0 && load < 1)) {
        return Invalid(v, "'loads' are fractions of capacity in (0, 1)");
      }
      s.loads.push_back(load);
    }
  }
  TALLY_ASSIGN_OR_RETURN(const double alone_runs, Number(data, "alone_runs", s.alone_runs));
  if (!(alone_runs >= 1 && alone_runs <= 100) || alone_runs != static_cast<int>(alone_runs)) {
    return Invalid(ValueOr(data, "alone_runs"),
                   "'alone_runs' must be a whole number from 1 to 100");
  }
  s.alone_runs = static_cast<int>(alone_runs);
  if (data.contains("device")) TALLY_RETURN_IF_ERROR(ReadDevice(data.at("device"), s.device));
  if (data.contains("emulator")) {
    TALLY_RETURN_IF_ERROR(ReadEmulator(data.at("emulator"), s.emulator));
  }
  if (data.contains("policy")) TALLY_RETURN_IF_ERROR(ReadPolicySettings(data.at("policy"), s));
  if (!data.contains("jobs") || data.at("jobs").as_array().empty()) {
    return Invalid(ValueOr(data, "jobs"), "a scenario needs [[jobs]]");
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const auto& jobs = data.at("jobs").as_array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    TALLY_ASSIGN_OR_RETURN(ScenarioJob job, ReadJob(jobs[i], i, dir));
    s.jobs.push_back(std::move(job));
  }
  return s;
}

}  // namespace

std::vector<std::string> EmulatorEnvironment(const EmulatedDevice& device) {
  std::vector<std::string> environment;
  if (device.sm_count) {
    environment.push_back(fmt::format("TALLY_EMU_SM_COUNT={}", *device.sm_count));
  }
  if (device.host_threads) {
    environment.push_back(fmt::format("TALLY_EMU_HOST_THREADS={}", *device.host_threads));
  }
  return environment;
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  try {
    const Table data = toml::parse(path);
    auto scenario = Parse(data, path);
    if (!scenario.ok()) {  // the message starts with the line and column
      return absl::InvalidArgumentError(
          fmt::format("{}:{}", path, std::string(scenario.status().message())));
    }
    return scenario;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", path, e.what()));
  }
}

absl::StatusOr<std::string> FindScenario(const std::string& name_or_path,
                                         const std::string& shipped_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_regular_file(name_or_path, error)) return name_or_path;
  const bool bare_name = fs::path(name_or_path).filename() == name_or_path;
  if (bare_name && !name_or_path.empty()) {
    for (const std::string& file : {name_or_path, name_or_path + ".toml"}) {
      const fs::path shipped = fs::path(shipped_dir) / file;
      if (fs::is_regular_file(shipped, error)) return shipped.string();
    }
  }
  return absl::NotFoundError(fmt::format(
      "no scenario file '{}'{} (`tally-bench list` names the shipped scenarios)", name_or_path,
      bare_name ? fmt::format(", neither here nor among the shipped ones in {}", shipped_dir)
                : std::string()));
}

}  // namespace tally::bench
