// tally-bench: compares GPU-sharing policies on benchmark scenarios (benchmarks/README.md).
//   tally-bench run SCENARIO|NAME [--mode sim|live] [--policies a,b] [--out DIR] [--no-plot]
//                   [--server-bin B] [--run-bin B] [--programs DIR] [--gpu]
//   tally-bench list
//   tally-bench plot RESULT [--out DIR]
//   tally-bench trace inference|training --name N --layers L --target-ms T --out FILE
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "benchmarks/bench/live_runner.h"
#include "benchmarks/bench/report.h"
#include "benchmarks/bench/runner.h"
#include "benchmarks/sim/trace_gen.h"

namespace tally::bench {
namespace {

namespace fs = std::filesystem;

std::string CommandLine(int argc, char** argv) {
  std::string out = "tally-bench";
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

// The matplotlib script beside the sources; the interpreter is Debian's (python3-matplotlib)
// unless TALLY_PYTHON names another.
int Plot(const std::string& result, const std::string& out_dir) {
  const char* python = std::getenv("TALLY_PYTHON");
  const std::string command =
      fmt::format("'{}' '{}' '{}' '{}'", python ? python : TALLY_BENCH_PYTHON,
                  TALLY_BENCH_PLOT_SCRIPT, result, out_dir);
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::cerr << "tally-bench: plotting failed (" << command
              << "); the JSON result is complete without the plots\n";
    return 1;
  }
  return 0;
}

void Progress(int step, int steps, const std::string& what) {
  static const bool tty = isatty(STDERR_FILENO);
  const std::string line = fmt::format("[{}/{}] {}", step, steps, what);
  if (tty) {
    std::cerr << "\r\033[K" << line << std::flush;
  } else {
    std::cerr << line << "\n";
  }
}

int Run(const std::string& name_or_path, const std::string& mode,
        std::vector<std::string> policies, std::string out_dir, bool plot, LiveOptions live,
        const std::string& command) {
  const auto path = FindScenario(name_or_path, TALLY_BENCH_SCENARIO_DIR);
  if (!path.ok()) {
    std::cerr << "tally-bench: " << path.status().message() << "\n";
    return 2;
  }
  auto scenario = LoadScenario(*path);
  if (!scenario.ok()) {
    std::cerr << "tally-bench: " << scenario.status().message() << "\n";
    return 2;
  }
  if (policies.empty()) policies = scenario->policies;
  if (policies.empty()) {
    for (const scheduler::PolicyDescription& d : scheduler::PolicyDescriptions()) {
      policies.emplace_back(d.name);
    }
  }
  if (out_dir.empty()) out_dir = (fs::path("bench-results") / scenario->name).string();
  fs::create_directories(out_dir);
  live.work_dir = (fs::path(out_dir) / "live").string();
  auto result = mode == "live" ? RunLive(*scenario, policies, live, Progress)
                               : RunSimulated(*scenario, policies, Progress);
  if (isatty(STDERR_FILENO)) std::cerr << "\n";
  if (!result.ok()) {
    std::cerr << "tally-bench: " << result.status().message() << "\n";
    return 1;
  }
  const std::string json_path = (fs::path(out_dir) / "result.json").string();
  std::ofstream(json_path) << ResultToJson(*result, command).dump(1) << "\n";
  const std::string table = MarkdownReport(*result);
  std::ofstream(fs::path(out_dir) / "report.md") << table;
  std::cout << table << "\nresult: " << json_path << "\n";
  return plot ? Plot(json_path, out_dir) : 0;
}

int List() {
  std::cout << "Scenarios (" << TALLY_BENCH_SCENARIO_DIR << "):\n";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(TALLY_BENCH_SCENARIO_DIR)) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    auto scenario = LoadScenario(file.string());
    std::cout << fmt::format(
        "  {:<34} {}\n", file.filename().string(),
        scenario.ok() ? scenario->description : std::string(scenario.status().message()));
  }
  std::cout << "Policies:\n";
  for (const scheduler::PolicyDescription& d : scheduler::PolicyDescriptions()) {
    std::cout << fmt::format("  {:<22} {}\n", d.name, d.summary);
  }
  return 0;
}

int Trace(const std::string& kind, sim::ModelShape shape, double target_ms, double gap_us,
          const std::string& out, const std::string& command) {
  shape.target = std::chrono::duration_cast<sim::Duration>(
      std::chrono::duration<double, std::milli>(target_ms));
  shape.launch_gap =
      std::chrono::duration_cast<sim::Duration>(std::chrono::duration<double, std::micro>(gap_us));
  shape.generated_by = command;
  const sim::DeviceSpec device;
  const sim::JobTrace trace = kind == "inference" ? sim::GenerateInference(shape, device)
                                                  : sim::GenerateTraining(shape, device);
  if (auto status = sim::SaveTrace(trace, out); !status.ok()) {
    std::cerr << "tally-bench: " << status.message() << "\n";
    return 1;
  }
  std::cout << fmt::format(
      "{}: {} kernels, {:.3f} ms alone on {}\n", out, trace.kernels.size(),
      std::chrono::duration<double, std::milli>(sim::AloneTime(trace, device)).count(),
      device.name);
  return 0;
}

}  // namespace
}  // namespace tally::bench

int main(int argc, char** argv) {
  using namespace tally::bench;
  std::signal(SIGPIPE, SIG_IGN);  // a live job that dies is reported, not fatal to us
  CLI::App app{"tally-bench: compare GPU-sharing policies on benchmark scenarios"};
  app.require_subcommand(1);
  const std::string command = CommandLine(argc, argv);

  std::string scenario, mode = "sim", out_dir;
  std::vector<std::string> policies;
  bool no_plot = false;
  CLI::App* run = app.add_subcommand("run", "run a scenario, print a table, write JSON and plots");
  run->add_option("scenario", scenario,
                  "scenario: a TOML file, or the name of a shipped one as `list` prints it")
      ->required();
  run->add_option("--mode", mode,
                  "sim: each job's kernel trace in the simulator; live: each job's command "
                  "through tally-run against a private tally-server per policy (the emulated "
                  "GPU unless --gpu), its files kept under OUT/live")
      ->check(CLI::IsMember({"sim", "live"}));
  LiveOptions live{
      .server = TALLY_BENCH_SERVER, .run = TALLY_BENCH_RUN, .programs = TALLY_BENCH_PROGRAMS};
  run->add_option("--server-bin", live.server, "live: the tally-server to start")
      ->capture_default_str();
  run->add_option("--run-bin", live.run, "live: the tally-run to start jobs with")
      ->capture_default_str();
  run->add_option("--programs", live.programs,
                  "live: where a job command's bare program name is looked up before PATH")
      ->capture_default_str();
  run->add_flag("--gpu", live.gpu, "live: servers on NVIDIA's driver instead of --emulate");
  run->footer(
      "Live mode (benchmarks/README.md): each run gets its own tally-server --policy NAME "
      "(--emulate unless --gpu) with a private socket, an empty private --profile-cache and "
      "--code-cache none. "
      "First each open-loop job alone with 10 requests at once, three times, measures one "
      "request's service time (the least disturbed run's; a load is a fraction of 1 / it); then "
      "per load each job alone under fifo, and all "
      "jobs together under each policy, started together for duration_s. tally-bench appends "
      "to each job's command: --handshake, and --arrivals FILE --latencies FILE (open loop) or "
      "--duration-ms D --throughput FILE (closed loop). Preemptions and risky launches come "
      "from the server's counters, turnarounds from its profiler; every file is kept under "
      "OUT/live.");
  run->add_option("--policies", policies, "policies to compare (default: the scenario's, or all)")
      ->delimiter(',');
  run->add_option("--out", out_dir, "output folder (default: bench-results/SCENARIO_NAME)");
  run->add_flag("--no-plot", no_plot, "write no PNG plots");

  CLI::App* list = app.add_subcommand("list", "list the shipped scenarios and the policies");

  std::string result_path, plot_out;
  CLI::App* plot =
      app.add_subcommand("plot", "plot a result: latency CDFs, p99 and throughput against load");
  plot->add_option("result", result_path, "result.json of a run")
      ->required()
      ->check(CLI::ExistingFile);
  plot->add_option("--out", plot_out, "output folder (default: the result's folder)");

  std::string kind, trace_out;
  tally::sim::ModelShape shape;
  double target_ms = 1, gap_us = 2;
  CLI::App* trace = app.add_subcommand("trace", "generate a kernel trace calibrated to a time");
  trace->add_option("kind", kind, "inference or training")
      ->required()
      ->check(CLI::IsMember({"inference", "training"}));
  trace->add_option("--name", shape.name, "the job's name")->required();
  trace->add_option("--layers", shape.layers, "layers of the model")->check(CLI::PositiveNumber);
  trace->add_option("--target-ms", target_ms, "a request's or an iteration's time alone")
      ->required()
      ->check(CLI::PositiveNumber);
  trace->add_option("--launch-gap-us", gap_us, "host time between two launches");
  trace->add_option("--seed", shape.seed, "seed of the kernel sizes");
  trace->add_option("--source", shape.source, "the calibration figure and its citation");
  trace->add_option("--out", trace_out, "trace file to write")->required();

  CLI11_PARSE(app, argc, argv);
  if (run->parsed()) return Run(scenario, mode, policies, out_dir, !no_plot, live, command);
  if (list->parsed()) return List();
  if (plot->parsed()) {
    return Plot(result_path, plot_out.empty()
                                 ? std::filesystem::path(result_path).parent_path().string()
                                 : plot_out);
  }
  return Trace(kind, shape, target_ms, gap_us, trace_out, command);
}
