// Semantic equivalence of the transformed forms on the whole PTX corpus: every kernel of every
// module the emulator can load runs in its original form and in its sliced (several slice
// sizes), PTB (several worker counts, also fewer than the SMs) and randomly preempted PTB
// forms, on a 1-D and a 3-D grid, and every form must leave identical bytes in every buffer
// and module global. Corpus kernels have no known argument semantics, so arguments come from
// the kernel's signature (kernel_harness.h); kernels whose results depend on block order are
// detected and compared within a stated tolerance. On the 1-D grid each form also runs at the
// largest dynamic shared memory it can take beside its own static shared memory, against the
// original at that size. Kernels the analysis refuses to transform must say why, and run in
// their original form (twice: the runs must agree, or are reported). A summary lists what was
// compared and why the rest was skipped; floors on the compared counts make regressions fail.
// Built twice: on the corpus (corpus_semantics_test) and on the PTX that the end-to-end
// programs embed (e2e_kernels_semantics_test, tests/e2e/CMakeLists.txt); the manifest and the
// floors are compile-time definitions.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <regex>

#include "emulator/tests/emu_library.h"
#include "ptx_transform/launch_forms.h"
#include "tests/corpus/corpus_support.h"
#include "tests/corpus/kernel_harness.h"
#include "tests/semantics/forms_runner.h"

namespace tally::ptx {
namespace {

using corpus::ArgStrategy;
using corpus::Arguments;
using corpus::Bytes;
using emu::testing::Emu;
using semantics::LaunchShape;
using semantics::TransformedModule;

// Order-dependent kernels (float atomics, races between blocks) compare every 4-byte word as
// f32 within this relative tolerance.
constexpr float kOrderTolerance = 1e-4f;

// The grids every kernel runs on: 1-D and 3-D, small (the emulator interprets every lane).
constexpr Dim3 kGrids[] = {{7, 1, 1}, {2, 3, 2}};

struct Summary {
  int modules = 0, modules_loaded = 0, kernels = 0;
  int compared_exact = 0, compared_order_dependent = 0, preempted_mid_grid = 0;
  // At the largest dynamic shared memory each form can take: forms compared with the original
  // at that size, and forms that cannot take the original's largest (the server launches the
  // original for such launches).
  // Order-dependent kernels' forms must run there, but are not compared: their original's
  // blocks race.
  int compared_at_largest = 0, ran_at_largest = 0, unfit_at_largest = 0;
  std::vector<std::string> order_dependent;  // kernel (grid) compared within tolerance
  // Not transformable, run in the original form only: kernels by the analysis' reasons.
  std::map<std::string, std::vector<std::string>> original_only;
  int original_only_count = 0;
  std::map<std::string, std::vector<std::string>> skipped;  // reason -> kernels or modules
  std::vector<std::string> beyond_tolerance;                // order-dependent, reported
  std::vector<std::string> failures;                        // a form differs: the test fails

  void Print() const {
    std::printf("corpus semantics: %d modules, %d load in the emulator; %d kernels\n", modules,
                modules_loaded, kernels);
    std::printf("  compared bit for bit: %d kernels\n", compared_exact);
    std::printf(
        "  order-dependent on some grid (atomics, read-modify-write races, clocks), compared\n"
        "  exactly where blocks run in ascending order, else within %g relative: %d kernels\n",
        static_cast<double>(kOrderTolerance), compared_order_dependent);
    for (const std::string& k : order_dependent) std::printf("    %s\n", k.c_str());
    for (const std::string& k : beyond_tolerance) {
      std::printf("    differs beyond tolerance (reported): %s\n", k.c_str());
    }
    std::printf("  PTB runs actually preempted mid-grid: %d\n", preempted_mid_grid);
    std::printf(
        "  at the largest dynamic shared memory each form can take: %d forms compared, %d of\n"
        "  order-dependent kernels run; %d forms with less room than their original's largest\n"
        "  (the server runs the original for such launches)\n",
        compared_at_largest, ran_at_largest, unfit_at_largest);
    std::printf("  not transformable, run in their original form only (twice): %d kernels\n",
                original_only_count);
    for (const auto& [reason, names] : original_only) {
      std::printf("    refused: %s\n", reason.c_str());
      for (const std::string& name : names) std::printf("      %s\n", name.c_str());
    }
    for (const auto& [reason, names] : skipped) {
      std::printf("  skipped, %s: %zu\n", reason.c_str(), names.size());
      for (const std::string& name : names) std::printf("    %s\n", name.c_str());
    }
  }
};

std::string ErrorName(CUresult result) {
  const char* name = nullptr;
  Emu().cuGetErrorName(result, &name);
  return name != nullptr ? name : std::to_string(result);
}

// Modules in a context of their own, recreated after a launch error (errors are sticky).
class Session {
 public:
  explicit Session(std::vector<TransformedModule*> modules) : modules_(std::move(modules)) {
    // sm_90 modules need a device of compute capability 9.0 (the default is 8.0).
    setenv("TALLY_EMU_CC", "90", /*overwrite=*/0);
    EMU_OK(Emu().cuInit(0));
  }
  explicit Session(TransformedModule& module) : Session(std::vector{&module}) {}
  ~Session() { Destroy(); }
  // A fresh context with the modules loaded; the emulator's error and message when one fails.
  CUresult Start(std::string* message) {
    Destroy();
    EMU_OK(Emu().cuCtxCreate_v2(&context_, 0, 0));
    corpus::CapturedStderr captured;
    CUresult result = CUDA_SUCCESS;
    for (TransformedModule* module : modules_) {
      if (result == CUDA_SUCCESS) result = module->Load();
    }
    *message = ErrorName(result) + " " + captured.Text();
    if (result != CUDA_SUCCESS) return result;
    for (TransformedModule* module : modules_) {
      globals_.emplace_back(module->module(), module->handle());
    }
    EMU_OK(Emu().cuMemAlloc_v2(&flag_, 256));
    return result;
  }
  // The variables of the i-th module.
  const corpus::ModuleGlobals& globals(size_t i = 0) const { return globals_.at(i); }
  // A u32 of the context's device memory: the fence's violation flag.
  CUdeviceptr flag() const { return flag_; }

 private:
  void Destroy() {
    globals_.clear();
    if (context_ != nullptr) Emu().cuCtxDestroy_v2(context_);
    context_ = nullptr;
  }
  std::vector<TransformedModule*> modules_;
  CUcontext context_ = nullptr;
  std::vector<corpus::ModuleGlobals> globals_;
  CUdeviceptr flag_ = 0;
};

std::string GridName(Dim3 grid) {
  return std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z);
}

// Where two snapshots first differ, for the failure message.
std::string FirstDifference(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size()) return "sizes differ";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return "first difference at byte " + std::to_string(i);
  }
  return "equal";
}

bool WithinTolerance(const Bytes& a, const Bytes& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i + 4 <= a.size(); i += 4) {
    float x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    if (std::memcmp(&x, &y, 4) == 0) continue;
    if (!std::isfinite(x) || !std::isfinite(y)) return false;
    if (std::fabs(x - y) > kOrderTolerance * std::max(std::fabs(x), std::fabs(y))) return false;
  }
  return std::memcmp(a.data() + a.size() / 4 * 4, b.data() + b.size() / 4 * 4, a.size() % 4) == 0;
}

// Runs one kernel on one grid in every form it has.
class KernelRun {
 public:
  KernelRun(TransformedModule& module, Session& session, const KernelForms& forms, Dim3 grid,
            Summary& summary, std::mt19937& rng)
      : module_(module),
        session_(session),
        forms_(forms),
        name_(forms.analysis.kernel),
        summary_(summary),
        rng_(rng) {
    const Function& kernel = *module.module().FindFunction(name_);
    shape_ = {grid, corpus::BlockShape(kernel),
              forms.analysis.uses_dynamic_shared ? corpus::kDynamicSharedBytes : 0u};
  }

  // Finds arguments under which the original runs; false (and the reason) when none do.
  bool FindArguments(std::string* reason) {
    for (const ArgStrategy& strategy : corpus::kArgStrategies) {
      args_.emplace(*module_.module().FindFunction(name_), module_.Signature(name_), strategy);
      std::string message;
      reference_ = Run(
          "original", [&] { return LaunchOriginal(); }, &message);
      if (reference_) return true;
      if (reason->empty()) *reason = message;
      args_.reset();
      Restart();
    }
    return false;
  }

  ~KernelRun() {
    if (!broken_) return;
    args_.reset();  // its buffers belong to the failed context
    Restart();
  }

  // Compares every form with the original; failures go to the summary.
  void CompareForms() {
    const uint32_t total = *LinearBlockCount(shape_.grid);
    if (ReadsNondeterministicRegister()) {
      MaskVaryingWords();
      order_dependent_ = true;
    }
    std::optional<Bytes> ascending, descending;
    if (!forms_.sliced.empty()) {
      auto one_each = *PlanSlices(shape_.grid, 1);
      ascending = RunSliced("sliced, 1 block per slice", one_each);
      std::reverse(one_each.begin(), one_each.end());
      descending = RunSliced("sliced, 1 block per slice, last block first", one_each);
      if (!ascending || !descending) return;
      // The result may depend on block order or on which blocks run concurrently when two
      // sequential orders disagree or when blocks update the same bytes.
      order_dependent_ |=
          *ascending != *descending || BlocksUpdateSharedBytes(one_each, *ascending);
    }
    compared_ = true;
    // Order-dependent kernels compare with the sequential ascending order: exact for the forms
    // that run blocks in that order, within kOrderTolerance for the others.
    const Bytes& reference = order_dependent_ && ascending ? *ascending : *reference_;
    const bool exact = !order_dependent_;
    auto compare = [&](const std::string& form, const std::optional<Bytes>& result,
                       bool exact_form) {
      if (!result) return;  // the error is recorded
      if (Masked(*result) == Masked(reference)) return;
      if (!exact_form && WithinTolerance(Masked(*result), Masked(reference))) return;
      if (exact_form && varying_.empty()) {
        summary_.failures.push_back(Where(form) + ": " + FirstDifference(*result, reference));
      } else {
        summary_.beyond_tolerance.push_back(Where(form));
      }
    };
    compare("original", reference_, exact);
    if (ascending) {
      compare("sliced, 1 block per slice", ascending, true);
      compare("sliced, last block first", descending, exact);
      for (uint32_t per_slice : {2u, 5u}) {
        compare("sliced, " + std::to_string(per_slice) + " blocks per slice",
                RunSliced("sliced", *PlanSlices(shape_.grid, per_slice)), exact);
      }
    }
    if (!forms_.preemptible.empty()) {
      // One worker runs the tasks in ascending order.
      compare("PTB, 1 worker", RunPtb(1, false), true);
      for (uint32_t workers : {3u, total + 2}) {
        compare("PTB, " + std::to_string(workers) + " workers", RunPtb(workers, false), exact);
      }
      for (uint32_t workers : {1u, 3u}) {
        compare("PTB preempted and resumed, " + std::to_string(workers) + " workers",
                RunPtb(workers, true), exact);
      }
    }
  }

  // Each form at the largest dynamic shared memory it can take beside its own static shared
  // memory (the device's opt-in limit, as the server allows a form at load), against the
  // original at the same size (order-dependent kernels: it must run). A form with more static
  // shared memory than its original cannot take the original's largest: counted, since the server
  // then launches the original.
  void CompareAtLargestDynamicShared() {
    int optin = 0;
    EMU_OK(Emu().cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                      0));
    const int original_static = StaticShared(name_);
    const uint32_t total = *LinearBlockCount(shape_.grid);
    for (const auto& [form, variant] :
         {std::pair{"sliced", forms_.sliced}, {"PTB", forms_.preemptible}}) {
      if (variant.empty()) continue;
      const int form_static = StaticShared(variant);
      if (form_static > original_static) ++summary_.unfit_at_largest;
      shape_.dynamic_shared = static_cast<uint32_t>(optin - form_static);
      const std::string at = " at " + std::to_string(shape_.dynamic_shared) +
                             " bytes of dynamic "
                             "shared memory (the most the " +
                             form + " form can take)";
      std::optional<Bytes> original = Run(
          "original" + at,
          [&] {
            AllowDynamicShared(name_);
            return LaunchOriginal();
          },
          nullptr);
      std::optional<Bytes> transformed = Run(
          form + at,
          [&] {
            AllowDynamicShared(variant);
            if (variant == forms_.sliced) {
              return semantics::RunSliced(module_, name_, args_->pointers(), shape_,
                                          *PlanSlices(shape_.grid, 2));
            }
            return semantics::RunPreemptible(module_, name_, args_->pointers(), shape_,
                                             std::min(3u, total), &rng_);
          },
          nullptr);
      if (!original || !transformed) return;  // the error is recorded
      if (order_dependent_) {
        ++summary_.ran_at_largest;
        continue;
      }
      ++summary_.compared_at_largest;
      if (Masked(*transformed) == Masked(*original)) continue;
      summary_.failures.push_back(Where(form + at) + ": " +
                                  FirstDifference(*transformed, *original));
    }
  }

  // A kernel without transformed forms: the original runs once more and must leave the same
  // bytes (words that vary by design left out); a difference is reported, not a failure, since
  // concurrently running blocks may legitimately order their atomics differently.
  void RepeatOriginal() {
    if (ReadsNondeterministicRegister()) MaskVaryingWords();
    std::optional<Bytes> again = Run(
        "original again", [&] { return LaunchOriginal(); }, nullptr);
    if (!again) return;  // the error is recorded
    compared_ = true;
    if (Masked(*again) != Masked(*reference_)) {
      order_dependent_ = true;
      summary_.beyond_tolerance.push_back(Where("original run twice"));
    }
  }

  bool compared() const { return compared_; }
  bool order_dependent() const { return order_dependent_; }

 private:
  // Clocks, timers and SM or launch ids differ between runs by design.
  bool ReadsNondeterministicRegister() const {
    for (const std::string& reg : forms_.analysis.special_registers) {
      if (reg.starts_with("%clock") || reg.starts_with("%globaltimer") ||
          reg.starts_with("%smid") || reg.starts_with("%gridid")) {
        return true;
      }
    }
    return false;
  }

  // Runs the original twice more and leaves out of every comparison the 8-byte words that
  // differ between its runs.
  void MaskVaryingWords() {
    varying_.assign(reference_->size() / 8, false);
    for (int run = 0; run < 2; ++run) {
      std::optional<Bytes> again = Run(
          "original again", [&] { return LaunchOriginal(); }, nullptr);
      if (!again) return;
      for (size_t w = 0; w < varying_.size(); ++w) {
        if (std::memcmp(&(*again)[w * 8], &(*reference_)[w * 8], 8) != 0) varying_[w] = true;
      }
    }
  }

  Bytes Masked(Bytes bytes) const {
    for (size_t w = 0; w < varying_.size(); ++w) {
      if (varying_[w]) std::memset(&bytes[w * 8], 0, 8);
    }
    return bytes;
  }

  // Runs every block alone (a slice of one block) from the initial state. Blocks that store
  // the same values to the same bytes are harmless (a 3-D grid on a kernel that reads only
  // %ctaid.x); true when blocks store different values to a byte or their updates of it
  // accumulate (the sequential run `ascending` ends with another value): atomics and
  // read-modify-write races, whose result may depend on order or on concurrency.
  bool BlocksUpdateSharedBytes(const std::vector<Slice>& blocks, const Bytes& ascending) {
    std::optional<Bytes> initial = Run(
        "nothing", [] { return CUDA_SUCCESS; }, nullptr);
    if (!initial) return false;
    std::vector<int> writers(initial->size(), 0);
    Bytes stored(initial->size());
    for (const Slice& block : blocks) {
      std::optional<Bytes> alone = Run(
          "one block alone",
          [&] {
            return semantics::RunSliced(module_, name_, args_->pointers(), shape_, {&block, 1});
          },
          nullptr);
      if (!alone) return false;
      for (size_t i = 0; i < stored.size(); ++i) {
        if ((*alone)[i] == (*initial)[i]) continue;
        if (writers[i]++ > 0 && (*alone)[i] != stored[i]) return true;
        stored[i] = (*alone)[i];
      }
    }
    for (size_t i = 0; i < stored.size(); ++i) {
      if (writers[i] > 1 && ascending[i] != stored[i]) return true;
    }
    return false;
  }

  std::string Where(const std::string& form) const {
    return name_ + " (grid " + GridName(shape_.grid) + ", " + args_->strategy().name + "): " + form;
  }

  void Restart() {
    std::string ignored;
    REQUIRE(session_.Start(&ignored) == CUDA_SUCCESS);
  }

  // Resets every buffer and global, runs `launch` with stdout silenced (device printf), and
  // returns what the kernel left in memory; nullopt after an error (the context is restarted).
  template <typename Launch>
  std::optional<Bytes> Run(const std::string& form, Launch launch, std::string* message) {
    if (broken_) return std::nullopt;  // a form failed: the context is gone
    args_->Reset();
    session_.globals().Reset();
    CUresult result;
    {
      corpus::Watchdog::Guard guard(name_ + ": " + form);
      corpus::SilencedStdout quiet;
      corpus::CapturedStderr captured;
      result = launch();
      if (result != CUDA_SUCCESS && message != nullptr) {
        *message = ErrorName(result) + ": " + captured.Text();
      }
    }
    if (result != CUDA_SUCCESS) {
      if (message == nullptr) {
        summary_.failures.push_back(Where(form) + ": " + ErrorName(result));
        broken_ = true;
      }
      return std::nullopt;
    }
    Bytes snapshot = args_->Snapshot();
    Bytes globals = session_.globals().Snapshot();
    snapshot.insert(snapshot.end(), globals.begin(), globals.end());
    return snapshot;
  }

  int StaticShared(const std::string& function) const {
    int bytes = 0;
    EMU_OK(Emu().cuFuncGetAttribute(&bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                    module_.Function(function)));
    return bytes;
  }

  // The opt-in a launch beyond 48 KiB of shared memory needs (CUDA C++ Programming Guide,
  // "Shared Memory"); set before every launch, since a restarted context reloads the module.
  void AllowDynamicShared(const std::string& function) const {
    EMU_OK(Emu().cuFuncSetAttribute(module_.Function(function),
                                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(shape_.dynamic_shared)));
  }

  // Cooperatively when the kernel reads %envreg1/2, the grid workspace of cooperative groups'
  // grid-wide synchronisation (without it, grid.sync() traps as on a GPU).
  CUresult LaunchOriginal() {
    CUfunction f = module_.Function(name_);
    auto params = args_->pointers();
    void** kernel_params = const_cast<void**>(params.data());
    const bool cooperative =
        std::any_of(forms_.analysis.special_registers.begin(),
                    forms_.analysis.special_registers.end(),
                    [](const std::string& reg) { return reg.starts_with("%envreg"); });
    CUresult result =
        cooperative
            ? Emu().cuLaunchCooperativeKernel(f, shape_.grid.x, shape_.grid.y, shape_.grid.z,
                                              shape_.block.x, shape_.block.y, shape_.block.z,
                                              shape_.dynamic_shared, nullptr, kernel_params)
            : Emu().cuLaunchKernel(f, shape_.grid.x, shape_.grid.y, shape_.grid.z,
                                   shape_.block.x, shape_.block.y, shape_.block.z,
                                   shape_.dynamic_shared, nullptr, kernel_params, nullptr);
    return result != CUDA_SUCCESS ? result : Emu().cuCtxSynchronize();
  }

  std::optional<Bytes> RunSliced(const std::string& form, const std::vector<Slice>& slices) {
    return Run(
        form,
        [&] { return semantics::RunSliced(module_, name_, args_->pointers(), shape_, slices); },
        nullptr);
  }

  std::optional<Bytes> RunPtb(uint32_t workers, bool preempt) {
    int launches = 0;
    auto result = Run(
        preempt ? "PTB preempted" : "PTB",
        [&] {
          return semantics::RunPreemptible(module_, name_, args_->pointers(), shape_, workers,
                                           preempt ? &rng_ : nullptr, &launches);
        },
        nullptr);
    if (preempt && launches > 1) ++summary_.preempted_mid_grid;
    return result;
  }

  TransformedModule& module_;
  Session& session_;
  const KernelForms& forms_;
  std::string name_;
  Summary& summary_;
  std::mt19937& rng_;
  LaunchShape shape_;
  std::optional<Arguments> args_;
  std::optional<Bytes> reference_;
  bool compared_ = false, order_dependent_ = false;
  std::vector<bool> varying_;  // 8-byte words left out of comparisons
  bool broken_ = false;        // a form failed to run
};

// A skip reason from an emulator log message: its first line without time stamp, kernel name,
// PTX line and addresses, so that kernels skipped for the same reason group together.
std::string Reason(const std::string& prefix, const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  static const std::regex kDetails(
      R"(^.*\] |kernel [^ ]+: |line \d+: | at PTX line.*| at [a-z]+ address 0x[0-9a-f]+)");
  return prefix + std::regex_replace(line, kDetails, "");
}

TEST_CASE("every corpus kernel computes the same in its original and transformed forms") {
  Summary summary;
  std::mt19937 rng(2026);
  corpus::Watchdog watchdog;
  for (const corpus::CorpusModule& m : corpus::ReadManifest()) {
    const std::string module_name = m.producer + " " + m.arch + " " + m.path.filename().string();
    INFO(module_name);
    ++summary.modules;
    TransformedModule module(corpus::ReadFile(m.path));
    Session session(module);
    std::string message;
    if (session.Start(&message) != CUDA_SUCCESS) {
      for (const KernelForms& forms : module.report().kernels) {
        ++summary.kernels;
        summary.skipped[Reason("module does not load: ", message)].push_back(module_name + ": " +
                                                                             forms.analysis.kernel);
      }
      continue;
    }
    ++summary.modules_loaded;
    for (const KernelForms& forms : module.report().kernels) {
      ++summary.kernels;
      const std::string kernel_name = module_name + ": " + forms.analysis.kernel;
      const bool transformable = !forms.sliced.empty() || !forms.preemptible.empty();
      std::string refusal;
      if (!transformable) {
        // The analysis refused both forms: it must say why (the server records the reason).
        for (const std::string& b : forms.analysis.slice_blockers) refusal += b + "; ";
        for (const std::string& b : forms.analysis.ptb_blockers) {
          if (refusal.find(b + "; ") == std::string::npos) refusal += b + "; ";
        }
        if (refusal.empty()) summary.failures.push_back(kernel_name + ": refused without a reason");
      }
      bool compared = false, order_dependent = false;
      std::string reason;
      for (Dim3 grid : kGrids) {
        KernelRun run(module, session, forms, grid, summary, rng);
        if (!run.FindArguments(&reason)) continue;
        if (!transformable) {
          run.RepeatOriginal();
          compared |= run.compared();
          continue;
        }
        run.CompareForms();
        // Once per kernel, on the 1-D grid: the emulator is slow.
        if (grid.y == 1 && grid.z == 1) run.CompareAtLargestDynamicShared();
        compared |= run.compared();
        if (run.order_dependent()) {
          order_dependent = true;
          summary.order_dependent.push_back(kernel_name + " (grid " + GridName(grid) + ")");
        }
      }
      if (!compared) {
        summary.skipped[Reason("the original faults under every argument strategy: ", reason)]
            .push_back(kernel_name);
      } else if (!transformable) {
        ++summary.original_only_count;
        summary.original_only[refusal.substr(0, refusal.size() - 2)].push_back(kernel_name);
      } else if (order_dependent) {
        ++summary.compared_order_dependent;
      } else {
        ++summary.compared_exact;
      }
    }
  }
  summary.Print();
  for (const std::string& failure : summary.failures) FAIL_CHECK(failure);
  // Raise as the emulator learns more of PTX: fewer compared kernels is a regression.
  CHECK(summary.compared_exact + summary.compared_order_dependent >= TALLY_CORPUS_COMPARED_FLOOR);
  CHECK(summary.original_only_count >= TALLY_CORPUS_ORIGINAL_ONLY_FLOOR);
  CHECK(summary.compared_at_largest >= TALLY_CORPUS_LARGEST_SHARED_FLOOR);
}

// The modules of the fencing test's sessions.
constexpr size_t kPlain = 0, kFenced = 1;

// `bytes` of the fenced module with every 8-byte value that points into its variables moved to
// the same place among the plain module's (kernels may store the address of a variable).
Bytes Relocated(Bytes bytes, const Session& session) {
  const auto [fenced_begin, fenced_end] = session.globals(kFenced).Span();
  const auto plain_begin = session.globals(kPlain).Span().first;
  for (size_t i = 0; i + 8 <= bytes.size(); ++i) {
    uint64_t value;
    std::memcpy(&value, &bytes[i], 8);
    if (value < fenced_begin || value >= fenced_end) continue;
    value = value - fenced_begin + plain_begin;
    std::memcpy(&bytes[i], &value, 8);
    i += 7;
  }
  return bytes;
}

// Every fenced corpus kernel, in its fenced original, sliced and PTB forms, against the same
// form of the unfenced module, with range 0 covering the argument buffers and range 2 the
// module's variables: identical bytes in every buffer and variable, and the violation flag
// never raised. On the 1-D grid, with sequential sliced (1 block per slice) and PTB (1 worker)
// runs, so that the results do not depend on block order; kernels whose original gives
// different results run to run, or that read clocks, are only run (the flag must stay clear),
// and so is the concurrent original of a kernel that has a sequential form.
TEST_CASE("every fenced corpus kernel computes the same as its unfenced forms") {
  constexpr Dim3 kGrid{7, 1, 1};
  int compared = 0, run_only = 0, refused = 0, skipped = 0;
  std::vector<std::string> failures;
  std::map<std::string, int> refusals;
  corpus::Watchdog watchdog;
  TransformOptions fence_options;
  fence_options.fence = true;
  for (const corpus::CorpusModule& m : corpus::ReadManifest()) {
    const std::string module_name = m.producer + " " + m.arch + " " + m.path.filename().string();
    INFO(module_name);
    const std::string text = corpus::ReadFile(m.path);
    TransformedModule plain(text), fenced(text, fence_options);
    Session session({&plain, &fenced});
    std::string message;
    if (session.Start(&message) != CUDA_SUCCESS) {
      skipped += static_cast<int>(fenced.report().kernels.size());
      continue;
    }
    for (const KernelForms& forms : fenced.report().kernels) {
      const std::string& name = forms.analysis.kernel;
      const std::string where = module_name + ": " + name;
      if (!forms.fenced) {
        ++refused;
        if (forms.fence_refusal.empty()) failures.push_back(where + ": refused without a reason");
        ++refusals[forms.fence_refusal.substr(0, forms.fence_refusal.find(" ("))];
        continue;
      }
      const KernelForms& plain_forms = plain.Forms(name);
      const Function& kernel = *plain.module().FindFunction(name);
      LaunchShape shape{kGrid, corpus::BlockShape(kernel),
                        forms.analysis.uses_dynamic_shared ? corpus::kDynamicSharedBytes : 0u};
      bool done = false;
      for (const ArgStrategy& strategy : corpus::kArgStrategies) {
        if (done) break;
        std::optional<Arguments> args;
        args.emplace(kernel, plain.Signature(name), strategy);
        auto [base0, size0] = corpus::FenceRange(args->Span());
        auto [base2, size2] = corpus::FenceRange(session.globals(kFenced).Span());
        FenceParams fence{{base0, 0, base2}, {size0, 0, size2}, session.flag()};
        std::vector<const void*> plain_args = args->pointers();
        std::vector<const void*> fenced_args = plain_args;
        fenced_args.push_back(&fence);
        // Resets memory, launches, and returns the buffers and the module's variables.
        auto run = [&](bool in_fenced, auto launch) -> std::optional<Bytes> {
          args->Reset();
          session.globals(in_fenced ? kFenced : kPlain).Reset();
          EMU_OK(Emu().cuMemsetD32_v2(session.flag(), 0, 1));
          CUresult result;
          {
            corpus::Watchdog::Guard guard(where);
            corpus::SilencedStdout quiet;
            corpus::CapturedStderr captured;
            result = launch();
          }
          if (result != CUDA_SUCCESS) return std::nullopt;
          Bytes bytes = args->Snapshot();
          Bytes globals = session.globals(in_fenced ? kFenced : kPlain).Snapshot();
          bytes.insert(bytes.end(), globals.begin(), globals.end());
          return bytes;
        };
        auto original = [&](TransformedModule& module, std::vector<const void*>& params) {
          return [&] {
            CUresult r = Emu().cuLaunchKernel(module.Function(name), kGrid.x, kGrid.y, kGrid.z,
                                              shape.block.x, shape.block.y, shape.block.z,
                                              shape.dynamic_shared, nullptr,
                                              const_cast<void**>(params.data()), nullptr);
            return r != CUDA_SUCCESS ? r : Emu().cuCtxSynchronize();
          };
        };
        auto restart = [&] {
          args.reset();
          std::string ignored;
          REQUIRE(session.Start(&ignored) == CUDA_SUCCESS);
        };
        std::optional<Bytes> reference = run(false, original(plain, plain_args));
        if (!reference) {  // faults under these arguments: the next strategy
          restart();
          continue;
        }
        done = true;
        std::optional<Bytes> again = run(false, original(plain, plain_args));
        bool deterministic = again == reference;
        for (const std::string& reg : forms.analysis.special_registers) {
          if (reg.starts_with("%clock") || reg.starts_with("%globaltimer") ||
              reg.starts_with("%smid")) {
            deterministic = false;
          }
        }
        // Variables initialised with addresses differ between the two modules: left out.
        const Bytes plain_initial = *run(false, [] { return CUDA_SUCCESS; });
        const Bytes fenced_initial = *run(true, [] { return CUDA_SUCCESS; });
        auto masked = [&](Bytes bytes) {
          for (size_t i = 0; i < bytes.size() && i < plain_initial.size(); ++i) {
            if (i >= fenced_initial.size() || plain_initial[i] != fenced_initial[i]) bytes[i] = 0;
          }
          return bytes;
        };
        auto check = [&](const std::string& form, const std::optional<Bytes>& expected,
                         const std::optional<Bytes>& actual, bool compare) {
          uint32_t flag = 0;
          if (actual) EMU_OK(Emu().cuMemcpyDtoH_v2(&flag, session.flag(), 4));
          if (!actual) {
            failures.push_back(where + ": fenced " + form + " failed to run");
          } else if (flag != 0) {
            failures.push_back(where + ": fenced " + form + " raised the violation flag");
          } else if (compare && expected && masked(*expected) != masked(*actual) &&
                     masked(*expected) != masked(Relocated(*actual, session))) {
            failures.push_back(where + ": fenced " + form + ": " +
                               FirstDifference(masked(*actual), masked(*expected)));
          }
          return actual.has_value();
        };
        // Blocks running concurrently may race (made-up arguments let blocks read what others
        // write; some kernels update variables without atomics), so the exact comparisons are
        // the sequential forms'; the concurrent original is compared only for kernels that have
        // none, and must otherwise run with the flag clear.
        const bool sliceable = !forms.sliced.empty() && !plain_forms.sliced.empty();
        const bool ptb = !forms.preemptible.empty() && !plain_forms.preemptible.empty();
        const auto slices = *PlanSlices(kGrid, 1);
        bool ok = check("original", reference, run(true, original(fenced, fenced_args)),
                        deterministic && !sliceable && !ptb);
        std::optional<Bytes> plain_sliced;
        if (ok && sliceable) {
          plain_sliced = run(
              false, [&] { return semantics::RunSliced(plain, name, plain_args, shape, slices); });
        }
        if (ok && sliceable) {
          ok = check(
              "sliced", plain_sliced,
              run(true,
                  [&] { return semantics::RunSliced(fenced, name, fenced_args, shape, slices); }),
              deterministic);
        }
        if (ok && ptb) {
          auto plain_ptb = run(
              false, [&] { return semantics::RunPreemptible(plain, name, plain_args, shape, 1); });
          ok = check(
              "PTB", plain_ptb,
              run(true,
                  [&] { return semantics::RunPreemptible(fenced, name, fenced_args, shape, 1); }),
              deterministic);
        }
        ++(deterministic ? compared : run_only);
        if (!ok) restart();
      }
      if (!done) ++skipped;
    }
  }
  std::printf(
      "fenced corpus semantics: %d kernels compared with their unfenced forms, %d only run "
      "(order-dependent or clocks), %d skipped (module does not load or the original faults), "
      "%d refused:\n",
      compared, run_only, skipped, refused);
  for (const auto& [reason, count] : refusals) std::printf("  %d: %s\n", count, reason.c_str());
  for (const std::string& failure : failures) FAIL_CHECK(failure);
  CHECK(compared >= TALLY_CORPUS_FENCED_FLOOR);
}

}  // namespace
}  // namespace tally::ptx
