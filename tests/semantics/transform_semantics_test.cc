// Semantic equivalence of the transformed forms on the emulated GPU: for each kernel of
// kernels.cu, the sliced form (several slice sizes, 1-D and 3-D grids), the PTB form (several
// worker counts, also fewer workers than SMs) and a PTB form preempted at random moments and
// resumed must all produce exactly the original kernel's output.
#include <algorithm>
#include <cstddef>
#include <random>

#include "emulator/tests/emu_library.h"
#include "emulator/tests/kernel_util.h"
#include "ptx_transform/launch_forms.h"
#include "tests/semantics/forms_runner.h"

namespace tally::ptx {
namespace {

using emu::testing::Emu;
using semantics::LaunchShape;
using semantics::TransformedModule;

struct KernelCase {
  const char* name;
  Dim3 grid;
  Dim3 block;
  uint32_t dynamic_shared = 0;
};

// Small launches: the emulator interprets every instruction.
const KernelCase kCases[] = {
    {"early_return_before_barrier", {6, 1, 1}, {64, 1, 1}},
    {"barrier_in_loop", {5, 1, 1}, {64, 1, 1}},
    {"uniform_branch_barriers", {6, 1, 1}, {64, 1, 1}},
    {"sync_predicates", {5, 1, 1}, {96, 1, 1}},
    {"count_after_early_return", {8, 1, 1}, {64, 1, 1}},
    {"named_barriers", {4, 1, 1}, {64, 1, 1}},
    {"predicated_ret_then_barrier", {5, 1, 1}, {64, 1, 1}},
    {"exit_instruction", {5, 1, 1}, {64, 1, 1}},
    {"ctaid_in_function", {3, 2, 2}, {8, 2, 2}},
    {"dynamic_shared", {4, 1, 1}, {64, 1, 1}, 64 * sizeof(int)},
    {"grid3d", {3, 2, 3}, {32, 1, 1}},
    {"count_block_runs", {7, 3, 1}, {32, 1, 1}},
};

constexpr int kInputs = 1000;

// The module of kernels.cu with its variants, loaded once into the emulator.
const TransformedModule& Transformed() {
  static TransformedModule* module = [] {
    emu::testing::EnsureContext();
    auto* loaded = new TransformedModule(emu::testing::ReadKernelFile(TALLY_SEMANTICS_PTX));
    EMU_OK(loaded->Load());
    return loaded;
  }();
  return *module;
}

// Input and output buffers of one run; the output starts zeroed.
struct Buffers {
  CUdeviceptr in = 0, out = 0;
  size_t out_count = 0;
  int n = kInputs;

  explicit Buffers(size_t outputs) : out_count(outputs) {
    std::mt19937 rng(42);
    std::vector<int> values(kInputs);
    for (int& v : values) v = static_cast<int>(rng() % 2001) - 1000;
    values[7] = 0;  // exercises __syncthreads_and's false case everywhere
    in = emu::testing::Upload(values);
    out = emu::testing::Zeros<int>(out_count);
  }
  ~Buffers() {
    Emu().cuMemFree_v2(in);
    Emu().cuMemFree_v2(out);
  }
  std::vector<int> Result() const { return emu::testing::Download<int>(out, out_count); }
};

size_t OutputCount(const KernelCase& c) {
  return size_t{c.grid.x} * c.grid.y * c.grid.z * c.block.x * c.block.y * c.block.z;
}

LaunchShape Shape(const KernelCase& c) { return {c.grid, c.block, c.dynamic_shared}; }

void Launch(CUfunction f, Dim3 grid, const KernelCase& c, void** params) {
  EMU_OK(Emu().cuLaunchKernel(f, grid.x, grid.y, grid.z, c.block.x, c.block.y, c.block.z,
                              c.dynamic_shared, nullptr, params, nullptr));
}

std::vector<int> RunOriginal(const KernelCase& c) {
  Buffers buffers(OutputCount(c));
  void* args[] = {&buffers.in, &buffers.out, &buffers.n};
  Launch(Transformed().Function(c.name), c.grid, c, args);
  EMU_OK(Emu().cuCtxSynchronize());
  std::vector<int> result = buffers.Result();
  // A reference of zeros would let a form that does nothing pass.
  REQUIRE(std::any_of(result.begin(), result.end(), [](int v) { return v != 0; }));
  return result;
}

std::vector<int> RunSliced(const KernelCase& c, uint32_t blocks_per_slice) {
  Buffers buffers(OutputCount(c));
  const void* args[] = {&buffers.in, &buffers.out, &buffers.n};
  auto slices = PlanSlices(c.grid, blocks_per_slice);
  REQUIRE(slices.ok());
  EMU_OK(semantics::RunSliced(Transformed(), c.name, args, Shape(c), *slices));
  return buffers.Result();
}

// With `preempt_rng`, preempted at random moments and resumed.
std::vector<int> RunPreemptible(const KernelCase& c, uint32_t workers,
                                std::mt19937* preempt_rng = nullptr) {
  Buffers buffers(OutputCount(c));
  const void* args[] = {&buffers.in, &buffers.out, &buffers.n};
  EMU_OK(semantics::RunPreemptible(Transformed(), c.name, args, Shape(c), workers, preempt_rng));
  return buffers.Result();
}

TEST_CASE("sliced forms compute what the original computes") {
  for (const KernelCase& c : kCases) {
    INFO(c.name);
    std::vector<int> expected = RunOriginal(c);
    for (uint32_t blocks_per_slice : {1u, 2u, 5u, 1000u}) {
      INFO("blocks per slice: " << blocks_per_slice);
      CHECK(RunSliced(c, blocks_per_slice) == expected);
    }
  }
}

TEST_CASE("PTB forms compute what the original computes") {
  int sm_count = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  for (const KernelCase& c : kCases) {
    INFO(c.name);
    std::vector<int> expected = RunOriginal(c);
    uint32_t total = *LinearBlockCount(c.grid);
    for (uint32_t workers : {1u, 2u, static_cast<uint32_t>(sm_count), total + 3}) {
      INFO("workers: " << workers);
      CHECK(RunPreemptible(c, workers) == expected);
    }
  }
}

TEST_CASE("PTB forms preempted at random moments and resumed compute the same") {
  std::mt19937 rng(7);
  for (KernelCase c : kCases) {
    INFO(c.name);
    c.grid.x *= 12;  // enough tasks that a random flag usually lands while the kernel runs
    std::vector<int> expected = RunOriginal(c);
    for (uint32_t workers : {1u, 3u}) {
      INFO("workers: " << workers);
      CHECK(RunPreemptible(c, workers, &rng) == expected);
    }
  }
}

// Block `stop` raises the flag itself, so the stop lands on a known task boundary.
TEST_CASE("a preempted PTB kernel stops at a task boundary and resumes without loss") {
  const KernelForms& forms = Transformed().Forms("raise_flag_in_block");
  REQUIRE_FALSE(forms.preemptible.empty());
  CUfunction f = Transformed().Function(forms.preemptible);
  const KernelCase c{"raise_flag_in_block", {5, 4, 1}, {32, 1, 1}};
  const uint32_t total = 20;
  for (uint32_t workers : {1u, 2u, 4u}) {
    for (int stop : {0, 7, 19}) {
      INFO("workers " << workers << ", stop after block " << stop);
      semantics::MappedPtbState state;
      CUdeviceptr flag = state.device() + offsetof(PtbState, preempt);
      CUdeviceptr runs = emu::testing::Zeros<int>(total);
      uint64_t state_address = state.device();
      Dim3 grid = c.grid;
      int stop_block = stop;
      void* args[] = {&flag, &runs, &stop_block, &state_address, &grid.x, &grid.y, &grid.z};
      Launch(f, Dim3{workers, 1, 1}, c, args);
      EMU_OK(Emu().cuCtxSynchronize());
      std::vector<int> after_stop = emu::testing::Download<int>(runs, total);
      // Every task taken ran once; with one worker exactly the blocks up to `stop`.
      uint32_t taken = state.next_task();
      CHECK(taken > static_cast<uint32_t>(stop));
      if (workers == 1) CHECK(taken == static_cast<uint32_t>(stop) + 1);
      for (uint32_t b = 0; b < total; ++b) CHECK(after_stop[b] == (b < taken ? 1 : 0));

      state.set_preempt(false);
      stop_block = -1;
      Launch(f, Dim3{workers, 1, 1}, c, args);
      EMU_OK(Emu().cuCtxSynchronize());
      CHECK(state.next_task() >= total);
      CHECK(emu::testing::Download<int>(runs, total) == std::vector<int>(total, 1));
      Emu().cuMemFree_v2(runs);
    }
  }
}

TEST_CASE("every block runs exactly once in every form") {
  const KernelCase& c = kCases[std::size(kCases) - 1];
  REQUIRE(std::string(c.name) == "count_block_runs");
  std::vector<int> runs = RunOriginal(c);
  uint32_t blocks = *LinearBlockCount(c.grid);
  for (uint32_t b = 0; b < blocks; ++b) CHECK(runs[b] == 1);
  std::mt19937 rng(11);
  CHECK(RunPreemptible(c, 2, &rng) == runs);
  CHECK(RunSliced(c, 3) == runs);
}

}  // namespace
}  // namespace tally::ptx
