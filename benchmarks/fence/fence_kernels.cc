// The fence's cost per kernel on the emulated GPU (issue 26): every kernel of the PTX modules a
// manifest lists (tests/corpus's, or the end-to-end programs'), launched unfenced and fenced
// (TransformOptions::fence) with the corpus harness's arguments on a 1-D grid of 7 blocks:
// lane-instructions executed (tallyEmuLaneInstructions, exact) and the best wall time of the
// runs (launch and synchronisation included). The fence's ranges are what the corpus semantics
// test gives it (range 0 the argument buffers, range 2 the module's variables), so no check
// fails and the fenced kernel does the original's work plus its checks.
//
// Usage: fence_kernels [--runs N] [--producer P] [--rows] MANIFEST...
// Prints, per manifest, a Markdown row per kernel (with --rows) and a summary: kernels measured,
// the geometric means of the fenced / unfenced ratios and the ratio of the totals.
#define CATCH_CONFIG_RUNNER
// First: it names cuda.h's versioned symbols as the emulator does.
#include "emulator/tests/emu_library.h"
// clang-format off: after the line above
#include "cuda_abi/driver_extensions.h"
// clang-format on

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ptx_transform/launch_forms.h"
#include "tests/corpus/kernel_harness.h"
#include "tests/semantics/forms_runner.h"

namespace tally::ptx {
namespace {

using corpus::Arguments;
using emu::testing::Emu;
using semantics::TransformedModule;

constexpr Dim3 kGrid{7, 1, 1};

struct Options {
  int runs = 5;
  std::string producer;  // only modules of this producer; empty: all
  bool rows = false;
  std::vector<std::string> manifests;
};
Options g_options;

// What one launch of a kernel costs.
struct Cost {
  uint64_t lane_instructions = 0;
  double seconds = 0;
};

// The totals and ratios of one manifest.
struct Summary {
  int measured = 0, refused = 0, skipped = 0;
  double log_instructions = 0, log_seconds = 0;
  uint64_t plain_instructions = 0, fenced_instructions = 0;
  double plain_seconds = 0, fenced_seconds = 0;
  void Add(const Cost& plain, const Cost& fenced) {
    ++measured;
    log_instructions += std::log(static_cast<double>(fenced.lane_instructions) /
                                 static_cast<double>(plain.lane_instructions));
    log_seconds += std::log(fenced.seconds / plain.seconds);
    plain_instructions += plain.lane_instructions;
    fenced_instructions += fenced.lane_instructions;
    plain_seconds += plain.seconds;
    fenced_seconds += fenced.seconds;
  }
  void Print(const std::string& manifest) const {
    std::printf(
        "\n%s: %d kernels measured, %d refused by the fence, %d skipped (module does not "
        "load, or the original faults under every argument strategy)\n",
        manifest.c_str(), measured, refused, skipped);
    if (measured == 0) return;
    std::printf("  lane-instructions fenced / unfenced: geometric mean %.3f, totals %.3f\n",
                std::exp(log_instructions / measured),
                static_cast<double>(fenced_instructions) / static_cast<double>(plain_instructions));
    std::printf("  wall time fenced / unfenced: geometric mean %.3f, totals %.3f\n",
                std::exp(log_seconds / measured), fenced_seconds / plain_seconds);
  }
};

uint64_t LaneInstructions() {
  static const auto read = reinterpret_cast<PFN_tallyEmuLaneInstructions>(
      dlsym(Emu().library, "tallyEmuLaneInstructions"));
  REQUIRE(read != nullptr);
  return read();
}

// Both modules in a context of their own, recreated after a fault (errors are sticky).
class Context {
 public:
  Context(TransformedModule& plain, TransformedModule& fenced) : plain_(plain), fenced_(fenced) {}
  ~Context() { Destroy(); }
  bool Start() {
    Destroy();
    EMU_OK(Emu().cuCtxCreate_v2(&context_, 0, 0));
    corpus::CapturedStderr quiet;
    if (plain_.Load() != CUDA_SUCCESS || fenced_.Load() != CUDA_SUCCESS) return false;
    plain_globals_.emplace(plain_.module(), plain_.handle());
    fenced_globals_.emplace(fenced_.module(), fenced_.handle());
    EMU_OK(Emu().cuMemAlloc_v2(&flag_, 256));
    return true;
  }
  const corpus::ModuleGlobals& globals(bool fenced) const {
    return fenced ? *fenced_globals_ : *plain_globals_;
  }
  CUdeviceptr flag() const { return flag_; }

 private:
  void Destroy() {
    plain_globals_.reset();
    fenced_globals_.reset();
    if (context_ != nullptr) Emu().cuCtxDestroy_v2(context_);
    context_ = nullptr;
  }
  TransformedModule &plain_, &fenced_;
  CUcontext context_ = nullptr;
  std::optional<corpus::ModuleGlobals> plain_globals_, fenced_globals_;
  CUdeviceptr flag_ = 0;
};

// Runs `function` g_options.runs times from the same initial memory; empty when a run fails or
// raises the fence's violation flag.
std::optional<Cost> Measure(CUfunction function, const Dim3& block, uint32_t shared,
                            std::vector<const void*> params, const Arguments& args,
                            const Context& context, bool fenced, const std::string& where) {
  Cost best{0, 1e30};
  for (int run = 0; run < g_options.runs; ++run) {
    args.Reset();
    context.globals(fenced).Reset();
    EMU_OK(Emu().cuMemsetD32_v2(context.flag(), 0, 1));
    std::fflush(stdout);
    CUresult result;
    const uint64_t before = LaneInstructions();
    const auto began = std::chrono::steady_clock::now();
    {
      corpus::Watchdog::Guard guard(where);
      corpus::SilencedStdout quiet;
      corpus::CapturedStderr captured;
      result = Emu().cuLaunchKernel(function, kGrid.x, kGrid.y, kGrid.z, block.x, block.y, block.z,
                                    shared, nullptr, const_cast<void**>(params.data()), nullptr);
      if (result == CUDA_SUCCESS) result = Emu().cuCtxSynchronize();
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
    uint32_t flag = 0;
    if (result == CUDA_SUCCESS) EMU_OK(Emu().cuMemcpyDtoH_v2(&flag, context.flag(), 4));
    if (result != CUDA_SUCCESS || flag != 0) return std::nullopt;
    best.lane_instructions = LaneInstructions() - before;
    best.seconds = std::min(best.seconds, took.count());
  }
  return best;
}

// Measures every fenced kernel of one module.
void MeasureModule(const std::string& name, const std::string& text, Summary& summary) {
  TransformOptions fence_options;
  fence_options.fence = true;
  TransformedModule plain(text), fenced(text, fence_options);
  Context context(plain, fenced);
  if (!context.Start()) {
    summary.skipped += static_cast<int>(fenced.report().kernels.size());
    return;
  }
  for (const KernelForms& forms : fenced.report().kernels) {
    const std::string& kernel_name = forms.analysis.kernel;
    if (!forms.fenced) {
      ++summary.refused;
      continue;
    }
    const Function& kernel = *plain.module().FindFunction(kernel_name);
    const Dim3 block = corpus::BlockShape(kernel);
    const uint32_t shared = forms.analysis.uses_dynamic_shared ? corpus::kDynamicSharedBytes : 0;
    const std::string where = name + " " + kernel_name;
    bool measured = false;
    for (const corpus::ArgStrategy& strategy : corpus::kArgStrategies) {
      std::optional<Arguments> args;
      args.emplace(kernel, plain.Signature(kernel_name), strategy);
      auto [base0, size0] = corpus::FenceRange(args->Span());
      auto [base2, size2] = corpus::FenceRange(context.globals(true).Span());
      FenceParams fence{{base0, 0, base2}, {size0, 0, size2}, context.flag()};
      std::vector<const void*> params = args->pointers();
      std::optional<Cost> plain_cost =
          Measure(plain.Function(kernel_name), block, shared, params, *args, context, false, where);
      params.push_back(&fence);
      std::optional<Cost> fenced_cost;
      if (plain_cost) {
        fenced_cost = Measure(fenced.Function(kernel_name), block, shared, params, *args, context,
                              true, where);
      }
      if (!plain_cost || !fenced_cost || plain_cost->lane_instructions == 0) {
        args.reset();
        REQUIRE(context.Start());
        continue;
      }
      measured = true;
      summary.Add(*plain_cost, *fenced_cost);
      if (g_options.rows) {
        std::printf("| %s | %llu | %llu | %.3f | %.0f | %.0f | %.3f |\n", where.c_str(),
                    static_cast<unsigned long long>(plain_cost->lane_instructions),
                    static_cast<unsigned long long>(fenced_cost->lane_instructions),
                    static_cast<double>(fenced_cost->lane_instructions) /
                        static_cast<double>(plain_cost->lane_instructions),
                    plain_cost->seconds * 1e6, fenced_cost->seconds * 1e6,
                    fenced_cost->seconds / plain_cost->seconds);
      }
      break;
    }
    if (!measured) ++summary.skipped;
  }
}

TEST_CASE("fence cost per kernel") {
  // sm_90 modules need a device of compute capability 9.0 (the default is 8.0).
  setenv("TALLY_EMU_CC", "90", /*overwrite=*/0);
  EMU_OK(Emu().cuInit(0));
  corpus::Watchdog watchdog;
  for (const std::string& manifest : g_options.manifests) {
    std::ifstream in(manifest);
    REQUIRE(in);
    if (g_options.rows) {
      std::printf(
          "\n%s\n\n| module kernel | lane-instructions unfenced | fenced | ratio | "
          "µs unfenced | fenced | ratio |\n|---|---:|---:|---:|---:|---:|---:|\n",
          manifest.c_str());
    }
    Summary summary;
    std::string producer, arch, path;
    while (in >> producer >> arch >> path) {
      if (!g_options.producer.empty() && producer != g_options.producer) continue;
      std::ifstream file(path, std::ios::binary);
      REQUIRE(file);
      std::stringstream text;
      text << file.rdbuf();
      const std::string base = path.substr(path.find_last_of('/') + 1);
      MeasureModule(producer + " " + arch + " " + base, text.str(), summary);
    }
    summary.Print(manifest);
  }
}

}  // namespace
}  // namespace tally::ptx

int main(int argc, char** argv) {
  using tally::ptx::g_options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      g_options.runs = std::atoi(argv[++i]);
    } else if (arg == "--producer" && i + 1 < argc) {
      g_options.producer = argv[++i];
    } else if (arg == "--rows") {
      g_options.rows = true;
    } else if (!arg.starts_with("-")) {
      g_options.manifests.push_back(arg);
    } else {
      g_options.manifests.clear();
      break;
    }
  }
  if (g_options.manifests.empty() || g_options.runs < 1) {
    std::fprintf(stderr, "usage: %s [--runs N>=1] [--producer P] [--rows] MANIFEST...\n", argv[0]);
    return 2;
  }
  char* catch_argv[] = {argv[0], const_cast<char*>("--reporter"), const_cast<char*>("compact")};
  return Catch::Session().run(3, catch_argv);
}
