// Scenario files: what a person writes is read as meant (paths relative to the file, numbers
// as integers or decimals, defaults), and mistakes are named.
#include "benchmarks/bench/scenario.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "benchmarks/bench/report.h"

namespace tally::bench {
namespace {

namespace fs = std::filesystem;

std::string Write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "tally_bench_scenario_test";
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST_CASE("A scenario file is read as written") {
  const std::string path = Write("pair.toml", R"(
name = "pair"
description = "an inference job beside a training job"
duration_s = 3
policies = ["priority", "mps"]
loads = [0.1, 0.5]
alone_runs = 3
[device]
sm_count = 80
launch_latency_us = 2.5
[policy]
min_idle_us = 50
time_slice_ms = 4
slowdown_budgets = [0.0, 0.1]
[[jobs]]
name = "infer"
priority = "high"
trace = "traces/infer.json"
command = ["./infer", "--batch", "1"]
arrivals = "bursty"
burst_on_ms = 20
[[jobs]]
name = "train"
trace = "/abs/train.json"
command = ["priority_jobs", "train"]
)");
  auto s = LoadScenario(path);
  REQUIRE(s.ok());
  CHECK(s->name == "pair");
  CHECK(s->duration == std::chrono::seconds(3));
  CHECK(s->policies == std::vector<std::string>{"priority", "mps"});
  CHECK(s->loads == std::vector<double>{0.1, 0.5});
  CHECK(s->device.sm_count == 80);
  CHECK(s->device.launch_latency == std::chrono::nanoseconds(2500));
  CHECK(s->priority.min_idle == std::chrono::microseconds(50));
  CHECK(s->time_slice.slice == std::chrono::milliseconds(4));
  CHECK(s->slowdown_budgets == std::vector<double>{0.0, 0.1});
  CHECK(s->alone_runs == 3);
  std::vector<std::string> labels;
  for (const PolicyVariant& v : PolicyVariants(*s, {"priority-budget", "mps"})) {
    labels.push_back(v.label);
  }
  CHECK(labels == std::vector<std::string>{"priority-budget 0%", "priority-budget 10%", "mps"});
  REQUIRE(s->jobs.size() == 2);
  CHECK(s->jobs[0].priority == ClientPriority::High());
  CHECK(s->jobs[0].trace == (fs::path(path).parent_path() / "traces/infer.json").string());
  // A program path is relative to the file; a bare name is looked up when live mode runs.
  CHECK(
      s->jobs[0].command ==
      std::vector<std::string>{(fs::path(path).parent_path() / "infer").string(), "--batch", "1"});
  CHECK(s->jobs[1].command == std::vector<std::string>{"priority_jobs", "train"});
  REQUIRE(s->jobs[0].arrivals.has_value());
  CHECK(s->jobs[0].arrivals->kind == sim::ArrivalKind::kBursty);
  CHECK(s->jobs[0].arrivals->on_mean == std::chrono::milliseconds(20));
  CHECK_FALSE(s->jobs[1].priority.is_set());
  CHECK(s->jobs[1].trace == "/abs/train.json");
  CHECK_FALSE(s->jobs[1].arrivals.has_value());
  CHECK(ForegroundJobs(*s) == std::vector<bool>{true, false});
}

TEST_CASE("Scenario mistakes are named at their line and column") {
  const auto message = [](const std::string& name, const std::string& text) {
    const std::string path = Write(name, text);
    return std::string(LoadScenario(path).status().message()).substr(path.size() + 1);
  };
  CHECK(message("a.toml", "nme = 1\n[[jobs]]\nname = \"x\"\n") ==
        "1:7: scenario: unknown key 'nme'");
  CHECK(message("b.toml", "duration_s = 1\n") == "1:1: a scenario needs [[jobs]]");
  CHECK(message("c.toml", "[[jobs]]\nname = \"x\"\narrivals = \"steady\"\n") ==
        "3:12: job x: unknown arrivals 'steady' (known: poisson, bursty, serverless)");
  CHECK(message("d.toml", "loads = [1.5]\n[[jobs]]\nname = \"x\"\n") ==
        "1:10: 'loads' are fractions of capacity in (0, 1)");
  CHECK(message("e.toml", "[[jobs]]\nname = \"x\"\npriority = \"urgent\"\n")
            .starts_with("3:12: job x: "));
  const std::string bad_command =
      "3:11: job x: 'command' must be a non-empty array of strings: the program and its arguments";
  CHECK(message("f.toml", "[[jobs]]\nname = \"x\"\ncommand = \"serve\"\n") == bad_command);
  CHECK(message("g.toml", "[[jobs]]\nname = \"x\"\ncommand = []\n") == bad_command);
  CHECK(message("i.toml", "[policy]\nslowdown_budgets = [-0.1]\n[[jobs]]\nname = \"x\"\n") ==
        "2:21: 'slowdown_budgets': -0.1 is not between 0 and 10 (1000%)");
  const std::string bad_runs = "1:14: 'alone_runs' must be a whole number from 1 to 100";
  CHECK(message("j.toml", "alone_runs = 0\n[[jobs]]\nname = \"x\"\n") == bad_runs);
  CHECK(message("k.toml", "alone_runs = 1.5\n[[jobs]]\nname = \"x\"\n") == bad_runs);
  CHECK(message("h.toml", "[[jobs]]\nname = \"x\"\ncommand = [\"a\", 1]\n") == bad_command);
  // A key that is missing: the table that lacks it.
  CHECK(message("l.toml", "[[jobs]]\nname = \"x\"\n[[jobs]]\npriority = \"high\"\n") ==
        "3:1: job 2: 'name' is required");
  CHECK(message("m.toml", "[device]\nsm_count = 0\n[[jobs]]\nname = \"x\"\n") ==
        "2:12: 'sm_count' must be >= 1");
  CHECK(message("n.toml", "duration_s = 0\n[[jobs]]\nname = \"x\"\n") ==
        "1:14: 'duration_s' must be > 0");
  // As compilers write it: the file, the line, the column.
  const std::string path = Write("o.toml", "\nseed = \"one\"\n[[jobs]]\nname = \"x\"\n");
  CHECK(LoadScenario(path).status().message() == path + ":2:8: 'seed' must be a number");
}

TEST_CASE("An [emulator] table shapes the emulated GPU of the live servers") {
  auto shaped = LoadScenario(Write("shaped.toml", R"(
[emulator]
sm_count = 2
host_threads = 2
[[jobs]]
name = "x"
)"));
  REQUIRE(shaped.ok());
  CHECK(shaped->emulator.sm_count == 2u);
  CHECK(shaped->emulator.host_threads == 2u);
  CHECK(EmulatorEnvironment(shaped->emulator) ==
        std::vector<std::string>{"TALLY_EMU_SM_COUNT=2", "TALLY_EMU_HOST_THREADS=2"});
  // Without the table the servers keep the emulator's defaults: no variable is set.
  auto plain = LoadScenario(Write("plain.toml", "[[jobs]]\nname = \"x\"\n"));
  REQUIRE(plain.ok());
  CHECK(EmulatorEnvironment(plain->emulator).empty());

  const auto message = [](const std::string& name, const std::string& table) {
    const std::string path = Write(name, "[emulator]\n" + table + "[[jobs]]\nname = \"x\"\n");
    return std::string(LoadScenario(path).status().message()).substr(path.size() + 1);
  };
  CHECK(message("e1.toml", "sms = 2\n") == "2:7: [emulator]: unknown key 'sms'");
  CHECK(message("e2.toml", "sm_count = 0\n") ==
        "2:12: [emulator]: 'sm_count' must be a whole number from 1 to 1024");
  CHECK(message("e3.toml", "host_threads = 1.5\n") ==
        "2:16: [emulator]: 'host_threads' must be a whole number from 1 to 1024");
  CHECK(message("e4.toml", "sm_count = \"2\"\n") ==
        "2:12: [emulator]: 'sm_count' must be a whole number from 1 to 1024");
  CHECK(
      message("e5.toml", "sm_count = 2\nhost_threads = 4\n") ==
      "3:16: [emulator]: 'host_threads' (4) must not exceed 'sm_count' (2): each host thread runs "
      "whole SMs");
}

TEST_CASE("A scenario is found by its path or by the name tally-bench list prints") {
  const std::string path = Write("named.toml", "name = \"named\"\n");
  const std::string dir = fs::path(path).parent_path().string();
  CHECK(FindScenario(path, "/nonexistent").value() == path);
  CHECK(FindScenario("named.toml", dir).value() == path);
  CHECK(FindScenario("named", dir).value() == path);
  const auto missing = FindScenario("absent", dir);
  REQUIRE(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).find(dir) != std::string::npos);
  // A path is only ever itself, never looked up among the shipped ones.
  CHECK(!FindScenario("elsewhere/named.toml", dir).ok());
  CHECK(!FindScenario("", dir).ok());
}

TEST_CASE("The noise of a rerun: the spread of the foreground's p99s alone") {
  BenchResult result;
  result.scenario.jobs = {{.name = "fg", .priority = ClientPriority::High()},
                          {.name = "bg", .priority = ClientPriority::BestEffort()}};
  LoadRun load;
  load.alone_p99s_us = {{10, 20, 15}, {}};
  CHECK(AloneP99Spread(result, load) == 1.0);  // 20 / 10 - 1
  load.alone_p99s_us = {{10}, {}};
  CHECK_FALSE(AloneP99Spread(result, load).has_value());  // one run alone: no spread
}

TEST_CASE("Percentiles are nearest-rank") {
  CHECK(Percentile({}, 99) == 0);
  CHECK(Percentile({5, 1, 3, 2, 4}, 50) == 3);
  CHECK(Percentile({5, 1, 3, 2, 4}, 99) == 5);
  CHECK(Percentile({5, 1, 3, 2, 4}, 0) == 1);
}

}  // namespace
}  // namespace tally::bench
