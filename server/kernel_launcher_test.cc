// The launcher on the emulated GPU: every form of a launch (original, sliced, PTB, PTB
// preempted at random points) runs every block of the original grid exactly once, with the
// original block indices; a kernel the analysis refuses runs in its original form; a PTB launch
// being preempted and resumed holds only its own stream.
#include "server/kernel_launcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/policy.h"

namespace tally::server {
namespace {

using scheduler::FormKind;
using scheduler::LaunchForm;

struct Device {
  Device()
      : backend(*Backend::Load(
            {.emulate = true, .device = 0, .emulator_library = TALLY_TEST_EMULATOR_LIBRARY})),
        modules(backend, /*build_forms=*/true) {
    backend.MakeCurrent().IgnoreError();
  }
  Backend backend;
  ModuleRegistry modules;
};

Device& TheDevice() {
  static Device* device = new Device;
  return *device;
}

std::shared_ptr<SharedModule> LoadTestModule() {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/forms_kernel.fatbin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  auto module = TheDevice().modules.Register({data, bytes.size()});
  REQUIRE(module.ok());
  return *module;
}

// Device buffers of `count` ints, zeroed, freed at the end.
class Ints {
 public:
  explicit Ints(size_t count) : count_(count) {
    REQUIRE(api().cuMemAlloc(&address_, count * sizeof(int)) == CUDA_SUCCESS);
    REQUIRE(api().cuMemsetD8Async(address_, 0, count * sizeof(int), nullptr) == CUDA_SUCCESS);
    // Done before the launch: the test's stream is non-blocking, unordered with this one.
    REQUIRE(api().cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
  }
  ~Ints() { api().cuMemFree(address_); }
  CUdeviceptr address() const { return address_; }
  std::vector<int> Download(CUstream stream) const {
    std::vector<int> values(count_);
    REQUIRE(api().cuMemcpyDtoHAsync(values.data(), address_, count_ * sizeof(int), stream) ==
            CUDA_SUCCESS);
    REQUIRE(api().cuStreamSynchronize(stream) == CUDA_SUCCESS);
    return values;
  }
  static const DriverApi& api() { return TheDevice().backend.api(); }

 private:
  size_t count_;
  CUdeviceptr address_ = 0;
};

// `kernel_name(a, b)` on `grid` blocks of 32 threads.
KernelLaunch TwoBufferLaunch(const std::string& kernel_name, ptx::Dim3 grid, const Ints& a,
                             const Ints& b, CUstream stream) {
  KernelLaunch launch;
  launch.module = LoadTestModule();
  auto kernel = launch.module->FindKernel(kernel_name);
  REQUIRE(kernel.ok());
  launch.kernel = *kernel;
  const CUdeviceptr args[2] = {a.address(), b.address()};
  launch.params.resize(sizeof(args));
  std::memcpy(launch.params.data(), args, sizeof(args));
  launch.grid = grid;
  launch.block = {32, 1, 1};
  launch.stream = stream;
  launch.stats = std::make_shared<LaunchStats>();
  return launch;
}

// Runs `kernel_name(a, b)` through a launcher whose policy is validation in `form`.
std::shared_ptr<const LaunchStats> Run(const LaunchForm& form, const std::string& kernel_name,
                                       ptx::Dim3 grid, const Ints& a, const Ints& b,
                                       CUstream stream) {
  Device& device = TheDevice();
  Dispatcher dispatcher(scheduler::MakeValidationPolicy(form),
                        [&] { device.backend.MakeCurrent().IgnoreError(); });
  KernelLauncher launcher(device.backend, dispatcher);
  const KernelLaunch launch = TwoBufferLaunch(kernel_name, grid, a, b, stream);
  CHECK(launcher.Launch(launch) == CUDA_SUCCESS);
  CHECK(device.backend.api().cuStreamSynchronize(stream) == CUDA_SUCCESS);
  return launch.stats;
}

CUstream NewStream() {
  CUstream stream = nullptr;
  REQUIRE(Ints::api().cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0) ==
          CUDA_SUCCESS);
  return stream;
}

TEST_CASE("every form runs every block of the grid once, with its original index") {
  const auto module = LoadTestModule();
  const Kernel* kernel = *module->FindKernel("RecordBlocks");
  REQUIRE(kernel->sliced.has_value());
  REQUIRE(kernel->preemptible.has_value());
  CUstream stream = NewStream();
  const ptx::Dim3 grid{5, 3, 2};
  const uint32_t blocks = 30;
  std::vector<int> ids;
  for (uint32_t z = 0; z < grid.z; ++z) {
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x)
        ids.push_back(static_cast<int>(x + 100 * y + 10000 * z));
    }
  }
  const LaunchForm forms[] = {
      {},
      {.kind = FormKind::kSliced, .slices = 1},
      {.kind = FormKind::kSliced, .slices = 4},
      {.kind = FormKind::kSliced, .slices = 100},
      {.kind = FormKind::kPreemptible, .workers = 1},
      {.kind = FormKind::kPreemptible, .workers = 3},
      {.kind = FormKind::kPreemptible, .preempt = true},
      {.kind = FormKind::kPreemptible, .workers = 2, .preempt = true},
  };
  for (const LaunchForm& form : forms) {
    INFO("form " << static_cast<int>(form.kind) << " slices " << form.slices << " workers "
                 << form.workers << " preempt " << form.preempt);
    for (int repeat = 0; repeat < (form.preempt ? 5 : 1); ++repeat) {
      Ints runs(blocks);
      Ints block_ids(blocks);
      const auto stats = Run(form, "RecordBlocks", grid, runs, block_ids, stream);
      CHECK(runs.Download(stream) == std::vector<int>(blocks, 1));
      CHECK(block_ids.Download(stream) == ids);
      CHECK(stats->original == (form.kind == FormKind::kOriginal ? 1u : 0u));
      CHECK(stats->sliced == (form.kind == FormKind::kSliced ? 1u : 0u));
      CHECK(stats->slices == (form.kind == FormKind::kSliced ? std::min(form.slices, blocks) : 0u));
      CHECK(stats->preemptible == (form.kind == FormKind::kPreemptible ? 1u : 0u));
      if (!form.preempt) CHECK(stats->resumes == 0u);
    }
  }
  Ints::api().cuStreamDestroy(stream);
}

TEST_CASE("a kernel the analysis refuses runs in its original form") {
  const auto module = LoadTestModule();
  const Kernel* kernel = *module->FindKernel("ReadSmid");
  CHECK_FALSE(kernel->sliced.has_value());
  CHECK_FALSE(kernel->preemptible.has_value());
  for (const LaunchForm& form :
       {LaunchForm{.kind = FormKind::kSliced, .slices = 2},
        LaunchForm{.kind = FormKind::kPreemptible, .workers = 2, .preempt = true}}) {
    Ints out(4);
    Ints unused(1);
    const auto stats = Run(form, "ReadSmid", {4, 1, 1}, out, unused, nullptr);
    CHECK(stats->original == 1u);
    CHECK(stats->total() == 1u);
    CHECK(out.Download(nullptr) == std::vector<int>(4, 1));
  }
}

TEST_CASE("a PTB launch being preempted and resumed holds only its own stream") {
  // Client A's PTB kernel is stopped before its first task; before it resumes (in the preempt
  // point, on the agent running it) client B's PTB kernel and copy, and A's work on another
  // stream, must all finish, while A's copy after the kernel on the kernel's stream must not
  // have run. Then that copy sees every block's result. With a dispatcher blocked by the PTB
  // launch, the others' work would never be issued and the checks below fail.
  Device& device = TheDevice();
  const DriverApi& api = device.backend.api();
  constexpr uint32_t kBlocksA = 12, kBlocksB = 5;
  constexpr uint64_t kCommandsA = 3, kCommandsB = 2;
  CUstream a_stream = NewStream(), a_other_stream = NewStream(), b_stream = NewStream();
  CUstream probe_stream = NewStream();
  Ints a_runs(kBlocksA), a_ids(kBlocksA), a_copy(kBlocksA), a_other(4);
  Ints b_runs(kBlocksB), b_ids(kBlocksB), b_copy(kBlocksB);
  Dispatcher dispatcher(scheduler::MakeValidationPolicy(
                            {.kind = FormKind::kPreemptible, .workers = 2, .preempt = true}),
                        [&] { device.backend.MakeCurrent().IgnoreError(); });
  auto queue_a = dispatcher.AddClient(1, 0);
  auto queue_b = dispatcher.AddClient(2, 0);

  int rounds_a = 0;
  bool others_done = false, copy_held = false;
  std::vector<int> b_seen, a_other_seen;
  auto preempt_point = [&](uint32_t taken, uint32_t total) -> uint32_t {
    if (total != kBlocksA) return total;  // B's launch runs through
    if (rounds_a++ == 0) return taken;    // A stops before its first task
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    while (!dispatcher.Issued(*queue_a, kCommandsA) || !dispatcher.Issued(*queue_b, kCommandsB)) {
      if (std::chrono::steady_clock::now() > deadline) return total;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    others_done = api.cuStreamSynchronize(b_stream) == CUDA_SUCCESS &&
                  api.cuStreamSynchronize(a_other_stream) == CUDA_SUCCESS;
    b_seen = b_copy.Download(probe_stream);
    a_other_seen = a_other.Download(probe_stream);
    copy_held = a_copy.Download(probe_stream) == std::vector<int>(kBlocksA, 0);
    return total;
  };
  KernelLauncher launcher(device.backend, dispatcher, preempt_point);

  KernelLaunch launch_a = TwoBufferLaunch("RecordBlocks", {kBlocksA, 1, 1}, a_runs, a_ids, a_stream);
  launch_a.client_id = 1;
  launch_a.queue = queue_a;
  KernelLaunch launch_b = TwoBufferLaunch("RecordBlocks", {kBlocksB, 1, 1}, b_runs, b_ids, b_stream);
  launch_b.client_id = 2;
  launch_b.queue = queue_b;
  const auto copy = [&api](const Ints& to, const Ints& from, size_t count, CUstream stream) {
    return [&api, to = to.address(), from = from.address(), count, stream] {
      return api.cuMemcpyDtoDAsync(to, from, count * sizeof(int), stream);
    };
  };
  dispatcher.Enqueue(*queue_a, [&] { return launcher.Launch(launch_a); });
  dispatcher.Enqueue(*queue_a, copy(a_copy, a_runs, kBlocksA, a_stream));
  dispatcher.Enqueue(*queue_a, [&api, to = a_other.address(), a_other_stream] {
    return api.cuMemsetD32Async(to, 7, 4, a_other_stream);
  });
  dispatcher.Enqueue(*queue_b, [&] { return launcher.Launch(launch_b); });
  dispatcher.Enqueue(*queue_b, copy(b_copy, b_runs, kBlocksB, b_stream));
  dispatcher.WaitIssued(*queue_a, kCommandsA);
  dispatcher.WaitIssued(*queue_b, kCommandsB);
  REQUIRE(api.cuStreamSynchronize(a_stream) == CUDA_SUCCESS);

  CHECK(others_done);
  CHECK(b_seen == std::vector<int>(kBlocksB, 1));
  CHECK(a_other_seen == std::vector<int>(4, 7));
  CHECK(copy_held);
  CHECK(rounds_a == 2);
  CHECK(a_copy.Download(probe_stream) == std::vector<int>(kBlocksA, 1));
  CHECK(launch_a.stats->preemptible == 1u);
  CHECK(launch_a.stats->preempted == 1u);
  CHECK(launch_a.stats->resumes == 1u);
  CHECK(launch_b.stats->resumes == 0u);
  CHECK(dispatcher.TakeDeferredError(*queue_a).result == CUDA_SUCCESS);
  CHECK(dispatcher.TakeDeferredError(*queue_b).result == CUDA_SUCCESS);
  for (CUstream stream : {a_stream, a_other_stream, b_stream, probe_stream}) {
    api.cuStreamDestroy(stream);
  }
}

}  // namespace
}  // namespace tally::server
