// Issue 5's equivalence check over the emulator's conformance suite: every case's kernel (nvcc
// and NVRTC PTX) runs in each transformed form (sliced with several slice sizes, PTB with 1, 2,
// fewer-than-SMs and more-than-SMs workers, PTB preempted at random moments and resumed) and
// must produce exactly what the original form produces (for cases whose results depend on the
// order of atomics: what the case's reference accepts). Kernels the analysis must refuse are
// refused, for the reason the case names.
#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "emulator/tests/conformance/run.h"
#include "emulator/tests/kernel_util.h"
#include "tests/semantics/forms_runner.h"

namespace tally::ptx {
namespace {

using emu::conformance::Case;
using emu::conformance::Outputs;
using emu::testing::Emu;
using semantics::LaunchShape;
using semantics::TransformedModule;

// The original form, cooperatively launched when the case needs grid-wide synchronisation.
CUresult RunOriginal(const TransformedModule& module, const Case& c,
                     const std::vector<void*>& args) {
  std::vector<void*> params = args;
  CUfunction f = module.Function(c.kernel);
  CUresult result =
      c.cooperative
          ? Emu().cuLaunchCooperativeKernel(f, c.grid.x, c.grid.y, c.grid.z, c.block.x,
                                            c.block.y, c.block.z, c.dynamic_shared, nullptr,
                                            params.data())
          : Emu().cuLaunchKernel(f, c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y,
                                 c.block.z, c.dynamic_shared, nullptr, params.data(), nullptr);
  return result != CUDA_SUCCESS ? result : Emu().cuCtxSynchronize();
}

std::vector<const void*> ConstArgs(const std::vector<void*>& args) {
  return {args.begin(), args.end()};
}

// One run of some form on fresh copies of the case's arguments, stdout captured.
Outputs RunForm(const Case& c, const std::function<CUresult(const std::vector<void*>&)>& launch) {
  emu::conformance::DeviceArgs args(c.args());
  std::vector<void*> params = args.Params();
  CUresult result = CUDA_SUCCESS;
  std::vector<std::string> printed =
      emu::conformance::CapturePrinted([&] { return launch(params); }, &result);
  EMU_OK(result);
  return args.Collect(std::move(printed));
}

bool SameOutputs(const Outputs& a, const Outputs& b) {
  for (size_t i = 0; i < a.args.size(); ++i) {
    if (a.args.Bytes(i) != b.args.Bytes(i)) return false;
  }
  std::vector<std::string> pa = a.printed, pb = b.printed;
  std::sort(pa.begin(), pa.end());
  std::sort(pb.begin(), pb.end());
  return pa == pb;
}

// The form is made when `expected_refusal` is null; otherwise refused for that reason.
void CheckRefusal(const char* form, const std::vector<std::string>& blockers, bool made,
                  const char* expected_refusal) {
  std::string reasons;
  for (const auto& b : blockers) reasons += b + "; ";
  INFO(form << " blockers: " << reasons);
  if (expected_refusal == nullptr) {
    CHECK(made);
    return;
  }
  CHECK_FALSE(made);
  CHECK(reasons.find(expected_refusal) != std::string::npos);
}

// Kernels of registered themes that a test of their own runs instead of a case, with why.
constexpr std::pair<std::string_view, std::string_view> kKernelsWithOwnTest[] = {
    // emulator/tests/conformance/call_stack_test.cc: its depths depend on the stack limit.
    {"calls_advanced", "deep_recursion"},
};

bool HasOwnTest(const std::string& module, const std::string& kernel) {
  return std::find(std::begin(kKernelsWithOwnTest), std::end(kKernelsWithOwnTest),
                   std::pair<std::string_view, std::string_view>(module, kernel)) !=
         std::end(kKernelsWithOwnTest);
}

TEST_CASE("conformance kernels compute the same in every transformed form") {
  emu::testing::EnsureContext();
  int sms = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  REQUIRE(sms >= 4);
  std::mt19937 rng(2024);
  size_t form_runs = 0, refused = 0, preempted_runs = 0, interrupted_runs = 0;
  for (const char* const* producer = emu::conformance::kProducers; *producer; ++producer) {
    std::map<std::string, std::unique_ptr<TransformedModule>> modules;
    std::map<std::string, std::set<std::string>> kernels_with_cases;  // by module
    for (const Case& c : emu::conformance::AllCases()) {
      kernels_with_cases[c.module].insert(c.kernel);
      INFO(*producer << " " << c.module << ".ptx: " << c.kernel);
      auto& module = modules[c.module];
      if (!module) {
        module = std::make_unique<TransformedModule>(
            emu::conformance::ReadModule(*producer, c.module));
        EMU_OK(module->Load());
      }
      const KernelForms& forms = module->Forms(c.kernel);
      CheckRefusal("sliced", forms.analysis.slice_blockers, !forms.sliced.empty(),
                   c.slice_refusal);
      CheckRefusal("PTB", forms.analysis.ptb_blockers, !forms.preemptible.empty(),
                   c.ptb_refusal);
      refused += forms.sliced.empty() + forms.preemptible.empty();

      const LaunchShape shape{
          {c.grid.x, c.grid.y, c.grid.z}, {c.block.x, c.block.y, c.block.z}, c.dynamic_shared};
      Outputs original = RunForm(
          c, [&](const std::vector<void*>& args) { return RunOriginal(*module, c, args); });
      CHECK(emu::conformance::Verify(c, original).empty());

      auto check = [&](const std::string& form, const Outputs& outputs) {
        INFO(form);
        std::string errors = emu::conformance::Verify(c, outputs);
        INFO(errors);
        CHECK(errors.empty());
        if (!c.order_dependent) CHECK(SameOutputs(outputs, original));
        ++form_runs;
      };
      const uint32_t blocks = *LinearBlockCount(shape.grid);
      if (!forms.sliced.empty()) {
        for (uint32_t per_slice : {1u, 2u, 3u, blocks}) {
          auto slices = PlanSlices(shape.grid, per_slice);
          REQUIRE(slices.ok());
          check("sliced, " + std::to_string(per_slice) + " blocks per slice",
                RunForm(c, [&](const std::vector<void*>& args) {
                  return semantics::RunSliced(*module, c.kernel, ConstArgs(args), shape, *slices);
                }));
        }
      }
      if (!forms.preemptible.empty()) {
        for (uint32_t workers : {1u, 2u, uint32_t(sms / 2), uint32_t(sms + 3)}) {
          check("PTB, " + std::to_string(workers) + " workers",
                RunForm(c, [&](const std::vector<void*>& args) {
                  return semantics::RunPreemptible(*module, c.kernel, ConstArgs(args), shape,
                                                   workers);
                }));
        }
        for (uint32_t workers : {1u, 3u}) {
          int launches = 0;
          check("PTB preempted and resumed, " + std::to_string(workers) + " workers",
                RunForm(c, [&](const std::vector<void*>& args) {
                  return semantics::RunPreemptible(*module, c.kernel, ConstArgs(args), shape,
                                                   workers, &rng, &launches);
                }));
          ++preempted_runs;
          interrupted_runs += launches > 1;
        }
      }
    }
    // Every kernel of every registered theme (newly registered ones too) has a case, so every
    // kernel runs in every form the analysis gives it.
    for (const auto& [name, module] : modules) {
      for (const KernelForms& kernel : module->report().kernels) {
        INFO(*producer << " " << name << ".ptx: " << kernel.analysis.kernel << " has no case");
        CHECK((kernels_with_cases[name].contains(kernel.analysis.kernel) ||
               HasOwnTest(name, kernel.analysis.kernel)));
      }
    }
  }
  INFO(form_runs << " form runs, " << refused << " forms refused, " << interrupted_runs << " of "
                 << preempted_runs << " preemptible runs really interrupted");
  CHECK(form_runs > 2 * 70 * 10);
  // Preemption really happened: many runs needed more than one launch (a quarter of the
  // launches start with the flag raised, so this does not depend on timing).
  CHECK(interrupted_runs * 10 > preempted_runs);
}

}  // namespace
}  // namespace tally::ptx
