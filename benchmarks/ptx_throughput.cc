// Benchmark: PTX parse + print throughput, and transformation throughput (parse, add sliced
// and PTB variants of every kernel, print), in MB/s of input PTX on a large module. The module
// is built from a real compiler-generated seed by repeating its kernels under new names until
// it reaches the requested size, so the instruction mix is what nvcc emits.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ptx_transform/parser.h"
#include "ptx_transform/printer.h"
#include "ptx_transform/transform.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of this thread: on a shared machine it tracks the work done, where wall time also
// counts the time other processes held the core.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Times {
  std::vector<double> wall, cpu;
  void Add(Clock::time_point w0, Clock::time_point w1, double c0, double c1) {
    wall.push_back(std::chrono::duration<double>(w1 - w0).count());
    cpu.push_back(c1 - c0);
  }
};

constexpr const char kUsage[] =
    "Usage: ptx_throughput [--seed FILE.ptx] [--mb N] [--runs N]\n"
    "Parses and prints a PTX module of about N MB (default 8) built from the seed's kernels, and\n"
    "transforms it (both forms),\n"
    "runs times (default 5), and reports MB/s for parse, print and both (median of runs), by\n"
    "wall time and by the thread's CPU time.\n";

std::string BuildLargeModule(const std::string& seed_text, size_t target_bytes) {
  auto seed = tally::ptx::ParseModuleOrError(seed_text, "seed");
  if (!seed.ok()) {
    std::fprintf(stderr, "%s", std::string(seed.status().message()).c_str());
    std::exit(1);
  }
  tally::ptx::Module large = *seed;
  std::vector<tally::ptx::Function> entries;
  for (const auto& item : seed->items) {
    const auto* f = std::get_if<tally::ptx::Function>(&item.value);
    if (f != nullptr && f->is_entry && f->body) entries.push_back(*f);
  }
  if (entries.empty()) {
    std::fprintf(stderr, "seed has no kernels\n");
    std::exit(1);
  }
  size_t copy = 0;
  while (tally::ptx::PrintModule(large).size() < target_bytes) {
    // Entries are never called, so renaming them (and their params) keeps the module valid.
    for (int batch = 0; batch < 200; ++batch, ++copy) {
      tally::ptx::Function f = entries[copy % entries.size()];
      f.name += "_copy" + std::to_string(copy);
      large.items.push_back({std::move(f)});
    }
  }
  return tally::ptx::PrintModule(large);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string seed_path = TALLY_BENCH_SEED_PTX;
  double mb = 8;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    if (arg == "--seed") {
      seed_path = argv[++i];
    } else if (arg == "--mb") {
      mb = std::atof(argv[++i]);
    } else if (arg == "--runs") {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  std::ifstream file(seed_path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "cannot open %s\n", seed_path.c_str());
    return 1;
  }
  std::ostringstream seed;
  seed << file.rdbuf();
  std::string text = BuildLargeModule(seed.str(), static_cast<size_t>(mb * 1e6));
  double size_mb = static_cast<double>(text.size()) / 1e6;

  Times parse, print, both, transform;
  for (int r = 0; r < runs; ++r) {
    auto w0 = Clock::now();
    double c0 = ThreadCpuSeconds();
    tally::ptx::DiagnosticSink sink;
    tally::ptx::Module module = tally::ptx::ParseModule(text, sink);
    auto w1 = Clock::now();
    double c1 = ThreadCpuSeconds();
    std::string printed = tally::ptx::PrintModule(module);
    auto w2 = Clock::now();
    double c2 = ThreadCpuSeconds();
    if (sink.HasErrors() || printed.size() < text.size() / 2) {
      std::fprintf(stderr, "benchmark module did not round-trip\n");
      return 1;
    }
    parse.Add(w0, w1, c0, c1);
    print.Add(w1, w2, c1, c2);
    both.Add(w0, w2, c0, c2);

    auto w3 = Clock::now();
    double c3 = ThreadCpuSeconds();
    tally::ptx::DiagnosticSink transform_sink;
    tally::ptx::Module transformed = tally::ptx::ParseModule(text, transform_sink);
    tally::ptx::TransformReport report = tally::ptx::TransformModule(transformed, {});
    std::string transformed_text = tally::ptx::PrintModule(transformed);
    auto w4 = Clock::now();
    double c4 = ThreadCpuSeconds();
    if (report.kernels.empty() || report.kernels[0].sliced.empty() ||
        transformed_text.size() <= printed.size()) {
      std::fprintf(stderr, "benchmark module was not transformed\n");
      return 1;
    }
    transform.Add(w3, w4, c3, c4);
  }
  std::printf("module: %.2f MB of PTX, %d runs (median)\n", size_mb, runs);
  std::printf("                 wall time   thread CPU time\n");
  auto row = [&](const char* name, const Times& t) {
    std::printf("%-15s %7.1f MB/s   %7.1f MB/s\n", name, size_mb / Median(t.wall),
                size_mb / Median(t.cpu));
  };
  row("parse", parse);
  row("print", print);
  row("parse + print", both);
  row("transform", transform);
  std::printf(
      "(transform: parse, add sliced and PTB variants of every kernel, print; MB/s of"
      " input)\n");
  return 0;
}
