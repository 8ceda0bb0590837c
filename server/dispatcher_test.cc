// The dispatcher on the emulated GPU: every form of a launch runs every block of the original
// grid exactly once with the original block indices (also when preempted and resumed); a kernel
// the analysis refuses runs in its original form; under the priority policy a high-priority
// client's kernel stops a best-effort PTB kernel, runs while it is held, and the stopped kernel
// later resumes and completes, its client's later work waiting for it; under --unfenceable alone
// an unfenced kernel waits while another client holds memory (and fails after the gate's wait),
// runs once it left, and keeps other clients from memory until it has ended; the runs of a client
// above best-effort count as busy time, a best-effort client's do not; a client removed during
// a PTB run is stopped and never resumed, and one removed between slices hands no empty PTB
// state to the next PTB kernel; a reported original-form run's end is its end on the
// device as its events time it, not the late poll's; where a fault poisons the shared context, a
// run whose launch went out but could not be followed counts for the fault's attribution. A
// kernel's transformed forms are made once, whichever clients' threads ask; made on the background
// worker, a best-effort launch waits for them (bounded) while a more important client is
// connected and in validation, and runs at once in its original form alone; a high-priority
// launch never waits; a module unloaded while its job is queued is left alone by the job.
#include "server/dispatcher.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "ipc/testing/eventually.h"
#include "scheduler/policy.h"
#include "scheduler/testing/policy_harness.h"
#include "server/kernel_runs.h"

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

const DriverApi& Api() { return TheDevice().backend.api(); }

std::shared_ptr<SharedModule> LoadTestModule(ModuleRegistry& modules = TheDevice().modules) {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/forms_kernel.fatbin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  auto module = modules.Register({data, bytes.size()});
  REQUIRE(module.ok());
  return *module;
}

// A registry whose background worker the test holds up: its first job waits until Release (at
// most 30 s). Declared after the dispatcher that it wakes, so that it stops first.
class HeldForms {
 public:
  explicit HeldForms(Dispatcher* wake = nullptr)
      : worker_(std::make_shared<FormsWorker>(
            1, 16, [] { TheDevice().backend.MakeCurrent().IgnoreError(); })),
        modules_(TheDevice().backend, /*build_forms=*/true, /*fence=*/false, /*code_cache=*/nullptr,
                 worker_) {
    REQUIRE(worker_->Submit(
        [gate = gate_.get_future().share()] { gate.wait_for(std::chrono::seconds(30)); }));
    if (wake != nullptr) modules_.SetFormsDone([wake] { wake->Wake(); });
  }
  ~HeldForms() { Release(); }
  void Release() {
    if (released_) return;
    released_ = true;
    gate_.set_value();
  }
  ModuleRegistry& modules() { return modules_; }
  const ModuleCounters& counters() const { return modules_.counters(); }
  // Waits (bounded) until the worker has run every job queued before this call.
  bool Drain() {
    auto done = std::make_shared<std::promise<void>>();
    if (!worker_->Submit([done] { done->set_value(); })) return false;
    return done->get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  }

 private:
  std::promise<void> gate_;
  bool released_ = false;
  std::shared_ptr<FormsWorker> worker_;
  ModuleRegistry modules_;
};

// The module's kernel `name` with its transformed forms made, as when the scheduler wants them.
const Kernel* PreparedKernel(SharedModule& module, const std::string& name) {
  auto kernel = module.FindKernel(name);
  REQUIRE(kernel.ok());
  module.PrepareForms(**kernel);
  return *kernel;
}

std::unique_ptr<Dispatcher> MakeDispatcher(std::unique_ptr<scheduler::Policy> policy,
                                           UnfencedGate* unfenced = nullptr) {
  auto dispatcher = Dispatcher::Create(
      TheDevice().backend, std::move(policy), nullptr, std::chrono::milliseconds(1),
      [] { TheDevice().backend.MakeCurrent().IgnoreError(); }, {}, unfenced);
  REQUIRE(dispatcher.ok());
  return *std::move(dispatcher);
}

// Device buffers of `count` ints, zeroed, freed at the end.
class Ints {
 public:
  explicit Ints(size_t count) : count_(count) {
    REQUIRE(Api().cuMemAlloc(&address_, count * sizeof(int)) == CUDA_SUCCESS);
    REQUIRE(Api().cuMemsetD8Async(address_, 0, count * sizeof(int), nullptr) == CUDA_SUCCESS);
    // Done before the launch: the test's streams are non-blocking, unordered with this one.
    REQUIRE(Api().cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
  }
  ~Ints() { Api().cuMemFree(address_); }
  CUdeviceptr address() const { return address_; }
  std::vector<int> Download(CUstream stream) const {
    std::vector<int> values(count_);
    REQUIRE(Api().cuMemcpyDtoHAsync(values.data(), address_, count_ * sizeof(int), stream) ==
            CUDA_SUCCESS);
    REQUIRE(Api().cuStreamSynchronize(stream) == CUDA_SUCCESS);
    return values;
  }

 private:
  size_t count_;
  CUdeviceptr address_ = 0;
};

class Stream {
 public:
  Stream() {
    REQUIRE(Api().cuStreamCreateWithPriority(&stream_, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS);
  }
  ~Stream() { Api().cuStreamDestroy(stream_); }
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

// `kernel(a, b[, iterations])` of `module` on `grid` blocks of 32 threads; `kernel(a)` for a
// kernel with one parameter (b unused).
KernelLaunch TwoBufferLaunch(std::shared_ptr<SharedModule> module, const Kernel* kernel,
                             ptx::Dim3 grid, const Ints& a, const Ints& b, CUstream stream,
                             uint32_t iterations = 0) {
  KernelLaunch launch;
  launch.module = std::move(module);
  launch.kernel = kernel;
  const CUdeviceptr args[2] = {a.address(), b.address()};
  launch.params.resize(launch.kernel->signature.param_buffer_size);
  std::memcpy(launch.params.data(), args, std::min(sizeof(args), launch.params.size()));
  if (iterations != 0) std::memcpy(launch.params.data() + sizeof(args), &iterations, 4);
  launch.grid = grid;
  launch.block = {32, 1, 1};
  launch.stream = stream;
  return launch;
}

// The same with the test module's `kernel_name`, its transformed forms made.
KernelLaunch TwoBufferLaunch(const std::string& kernel_name, ptx::Dim3 grid, const Ints& a,
                             const Ints& b, CUstream stream, uint32_t iterations = 0) {
  std::shared_ptr<SharedModule> module = LoadTestModule();
  const Kernel* kernel = PreparedKernel(*module, kernel_name);
  return TwoBufferLaunch(std::move(module), kernel, grid, a, b, stream, iterations);
}

Command CopyInts(const Ints& to, const Ints& from, size_t count, CUstream stream) {
  return [to = to.address(), from = from.address(), count, stream] {
    return Api().cuMemcpyDtoDAsync(to, from, count * sizeof(int), stream);
  };
}

using ipc::testing::Eventually;

TEST_CASE("A kernel's transformed forms are made when asked for, its alone") {
  const ModuleCounters& counters = TheDevice().modules.counters();
  const uint64_t indexed = counters.kernels_indexed;
  const uint64_t transformed = counters.kernels_transformed;
  const uint64_t loaded = counters.forms_loaded;
  const auto module = LoadTestModule();
  const size_t kernels = module->kernels().size();
  REQUIRE(kernels > 1);
  // A fresh parse (no other test holds the module): every kernel indexed, none transformed.
  CHECK(counters.kernels_indexed.load() == indexed + kernels);
  CHECK(counters.kernels_transformed.load() == transformed);
  const Kernel* kernel = *module->FindKernel("RecordBlocks");
  CHECK_FALSE(kernel->sliced.has_value());
  module->PrepareForms(*kernel);
  CHECK(kernel->sliced.has_value());
  CHECK(kernel->preemptible.has_value());
  module->PrepareForms(*kernel);  // made once
  CHECK(counters.kernels_transformed.load() == transformed + 1);
  CHECK(counters.forms_loaded.load() == loaded + 2);
  CHECK_FALSE((*module->FindKernel("ReadSmid"))->sliced.has_value());
}

TEST_CASE("A kernel's attributes set before its forms are made go to them when they are") {
  HeldForms held;
  held.Release();
  const auto module = LoadTestModule(held.modules());
  const Kernel* kernel = *module->FindKernel("RecordBlocks");
  module->SetAttribute(*kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024);
  CHECK(kernel->forms_pending.get());  // a setting makes no forms
  CHECK(held.counters().kernels_transformed.load() == 0);
  module->PrepareForms(*kernel);
  REQUIRE(kernel->sliced.has_value());
  REQUIRE(kernel->preemptible.has_value());
  const auto allowed = [](const KernelVariant& variant) {
    int bytes = -1;
    REQUIRE(Api().cuFuncGetAttribute(&bytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     variant.function) == CUDA_SUCCESS);
    return bytes;
  };
  CHECK(allowed(*kernel->sliced) == 1024);
  CHECK(allowed(*kernel->preemptible) == 1024);
  module->SetAttribute(*kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 2048);  // made
  CHECK(allowed(*kernel->sliced) == 2048);
}

TEST_CASE("Clients' threads launching a shared module's kernels at once transform each once") {
  const ModuleCounters& counters = TheDevice().modules.counters();
  const auto module = LoadTestModule();
  const uint64_t transformed = counters.kernels_transformed;
  const char* names[] = {"RecordBlocks", "SlowRecordBlocks"};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      TheDevice().backend.MakeCurrent().IgnoreError();
      module->PrepareForms(**module->FindKernel(names[i % 2]));
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(counters.kernels_transformed.load() == transformed + 2);
  for (const char* name : names) CHECK((*module->FindKernel(name))->preemptible.has_value());
}

// Priority scheduling with short idle times, and a shape every kernel gets: PTB with 4 workers.
std::unique_ptr<Dispatcher> MakePriorityDispatcher(
    scheduler::testing::FakeAdvisor& advisor,
    scheduler::Duration forms_wait = Dispatcher::kFormsWait) {
  advisor.fallback = {LaunchForm::Preemptible(4), true};
  auto dispatcher = Dispatcher::Create(
      TheDevice().backend,
      scheduler::MakePriorityPolicy({std::chrono::milliseconds(2), std::chrono::milliseconds(20)},
                                    advisor),
      nullptr, std::chrono::milliseconds(1),
      [] { TheDevice().backend.MakeCurrent().IgnoreError(); }, {}, /*unfenced=*/nullptr,
      forms_wait);
  REQUIRE(dispatcher.ok());
  return *std::move(dispatcher);
}

// A priority dispatcher, and the test module in a registry whose forms worker the test holds up.
struct HeldFormsDispatch {
  explicit HeldFormsDispatch(scheduler::Duration forms_wait = Dispatcher::kFormsWait)
      : dispatcher(MakePriorityDispatcher(advisor, forms_wait)),
        held(dispatcher.get()),
        module(LoadTestModule(held.modules())) {}
  const Kernel* Find(const char* name) const { return *module->FindKernel(name); }

  scheduler::testing::FakeAdvisor advisor;
  std::unique_ptr<Dispatcher> dispatcher;
  HeldForms held;  // stops before the dispatcher it wakes
  std::shared_ptr<SharedModule> module;
};

TEST_CASE_METHOD(HeldFormsDispatch,
                 "A best-effort launch beside a high client has its forms made, waits for them") {
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  auto foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  const Kernel* kernel = Find("RecordBlocks");
  Stream stream, other;
  Ints runs(4), ids(4), high_runs(4), high_ids(4);
  dispatcher->EnqueueKernel(*background,
                            TwoBufferLaunch(module, kernel, {4, 1, 1}, runs, ids, stream.get()));
  dispatcher->EnqueueKernel(
      *foreground, TwoBufferLaunch(module, kernel, {4, 1, 1}, high_runs, high_ids, other.get()));
  // The high client's launch runs in its original form while the forms are still to be made.
  REQUIRE(Eventually([&] { return dispatcher->Issued(*foreground, 1); }, std::chrono::seconds(30)));
  CHECK(dispatcher->stats(*foreground).original == 1u);
  CHECK(kernel->forms_pending.get());
  // The best-effort launch had them made (once: requests of a kernel queued are not repeated),
  // and is held, not run unshaped, until they are.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(dispatcher->Issued(*background, 1));
  CHECK(held.counters().forms_queued.load() == 1);
  CHECK(held.counters().forms_waited.load() == 1);
  held.Release();
  REQUIRE(Eventually([&] { return dispatcher->Issued(*background, 1); }, std::chrono::seconds(30)));
  CHECK(held.counters().forms_made.load() == 1);
  CHECK(dispatcher->stats(*background).preemptible == 1u);
  CHECK(dispatcher->stats(*background).original == 0u);
  CHECK(runs.Download(stream.get()) == std::vector<int>(4, 1));
  CHECK(high_runs.Download(other.get()) == std::vector<int>(4, 1));
  dispatcher->RemoveClient(*foreground);
  dispatcher->RemoveClient(*background);
}

TEST_CASE("A best-effort client alone, or one held past the bound, runs without its forms") {
  scheduler::testing::FakeAdvisor advisor;
  const bool alone = GENERATE(true, false);
  INFO("alone " << alone);
  auto dispatcher = MakePriorityDispatcher(advisor, std::chrono::milliseconds(100));
  HeldForms held(dispatcher.get());
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  std::shared_ptr<Dispatcher::ClientQueue> foreground;
  if (!alone) foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  const auto module = LoadTestModule(held.modules());
  const Kernel* kernel = *module->FindKernel("RecordBlocks");
  Stream stream;
  Ints runs(4), ids(4);
  const auto start = std::chrono::steady_clock::now();
  dispatcher->EnqueueKernel(*background,
                            TwoBufferLaunch(module, kernel, {4, 1, 1}, runs, ids, stream.get()));
  REQUIRE(Eventually([&] { return dispatcher->Issued(*background, 1); }, std::chrono::seconds(30)));
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(kernel->forms_pending.get());  // the worker is still held up
  CHECK(dispatcher->stats(*background).original == 1u);
  CHECK(runs.Download(stream.get()) == std::vector<int>(4, 1));
  CHECK(held.counters().forms_waited.load() == (alone ? 0u : 1u));
  CHECK(held.counters().forms_queued.load() == (alone ? 0u : 1u));  // alone: not even asked for
  if (!alone) CHECK(waited >= std::chrono::milliseconds(100));
  if (foreground) dispatcher->RemoveClient(*foreground);
  dispatcher->RemoveClient(*background);
}

TEST_CASE_METHOD(HeldFormsDispatch,
                 "Clients whose kernels run in their original form have no forms made") {
  // Alone at any level, or on top beside a less important client: the policy never shapes them.
  const int32_t level = GENERATE(ClientPriority::kHighLevel, 0, 7, -3);
  const bool beside_lower = GENERATE(false, true);
  INFO("level " << level << (beside_lower ? ", beside a lower client" : ", alone"));
  held.Release();  // the worker would make whatever it was asked for
  auto queue = dispatcher->AddClient(ClientId(1), ClientPriority::Level(level));
  std::shared_ptr<Dispatcher::ClientQueue> lower;
  if (beside_lower) lower = dispatcher->AddClient(ClientId(2), ClientPriority::Level(level - 1));
  const Kernel* kernel = Find("RecordBlocks");
  Stream stream;
  Ints runs(4), ids(4);
  for (int i = 0; i < 2; ++i) {
    dispatcher->EnqueueKernel(*queue,
                              TwoBufferLaunch(module, kernel, {4, 1, 1}, runs, ids, stream.get()));
  }
  dispatcher->WaitIssued(*queue, 2);
  CHECK(runs.Download(stream.get()) == std::vector<int>(4, 2));
  CHECK(dispatcher->stats(*queue).original == 2u);
  REQUIRE(held.Drain());
  CHECK(held.counters().forms_queued.load() == 0);
  CHECK(held.counters().forms_made.load() == 0);
  CHECK(held.counters().kernels_transformed.load() == 0);
  CHECK(kernel->forms_pending.get());
  if (lower) dispatcher->RemoveClient(*lower);
  dispatcher->RemoveClient(*queue);
}

TEST_CASE_METHOD(HeldFormsDispatch,
                 "A priority change that shapes a client has its queued kernels' forms made") {
  // A best-effort client beside another runs unshaped, two kernels at a time: the third waits,
  // announced, the fourth behind it. Once the other is raised to high, the forms of both are
  // made, and the announced one waits for them and runs shaped.
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  auto other = dispatcher->AddClient(ClientId(2), ClientPriority::BestEffort());
  const Kernel* slow = Find("SlowRecordBlocks");
  const Kernel* fast = Find("RecordBlocks");
  constexpr uint32_t kBlocks = 8;
  Stream stream;
  Ints slow_runs(kBlocks), slow_ids(kBlocks), runs(kBlocks), ids(kBlocks);
  for (int i = 0; i < 3; ++i) {
    dispatcher->EnqueueKernel(*background, TwoBufferLaunch(module, slow, {kBlocks, 1, 1}, slow_runs,
                                                           slow_ids, stream.get(), 400'000));
  }
  dispatcher->EnqueueKernel(
      *background, TwoBufferLaunch(module, fast, {kBlocks, 1, 1}, runs, ids, stream.get()));
  REQUIRE(Eventually([&] { return dispatcher->Issued(*background, 2); }));
  CHECK(held.counters().forms_queued.load() == 0);
  dispatcher->SetPriority(*other, ClientPriority::High());
  REQUIRE(Eventually([&] { return held.counters().forms_queued.load() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE(dispatcher->Issued(*background, 3));  // not run unshaped meanwhile
  CHECK(slow->forms_pending.get());
  held.Release();
  REQUIRE(Eventually([&] { return dispatcher->Issued(*background, 4); }));
  CHECK(held.counters().forms_made.load() == 2);
  CHECK(held.counters().forms_waited.load() >= 1);
  const SchedulingStats& stats = dispatcher->stats(*background);
  CHECK(stats.original == 2u);
  CHECK(stats.preemptible == 2u);
  CHECK(slow_runs.Download(stream.get()) == std::vector<int>(kBlocks, 3));
  CHECK(runs.Download(stream.get()) == std::vector<int>(kBlocks, 1));
  dispatcher->RemoveClient(*other);
  dispatcher->RemoveClient(*background);
}

TEST_CASE("Validation waits for a kernel's forms and runs it in the form under validation") {
  auto dispatcher = MakeDispatcher(scheduler::MakeValidationPolicy(LaunchForm::Sliced(2), false));
  HeldForms held(dispatcher.get());
  auto queue = dispatcher->AddClient(ClientId(1), ClientPriority::Unset());
  const auto module = LoadTestModule(held.modules());
  const Kernel* kernel = *module->FindKernel("RecordBlocks");
  Stream stream;
  Ints runs(4), ids(4);
  dispatcher->EnqueueKernel(*queue,
                            TwoBufferLaunch(module, kernel, {4, 1, 1}, runs, ids, stream.get()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(dispatcher->Issued(*queue, 1));
  CHECK(held.counters().forms_queued.load() == 1);  // every client's kernels run shaped
  held.Release();
  dispatcher->WaitIssued(*queue, 1);
  CHECK(dispatcher->stats(*queue).sliced == 1u);
  CHECK(runs.Download(stream.get()) == std::vector<int>(4, 1));
  dispatcher->RemoveClient(*queue);
}

TEST_CASE("A module unloaded while its forms job is queued is left alone by the job") {
  HeldForms held;
  std::weak_ptr<SharedModule> unloaded;
  {
    const auto module = LoadTestModule(held.modules());
    module->RequestForms(**module->FindKernel("RecordBlocks"));
    unloaded = module;
  }
  CHECK(unloaded.expired());
  CHECK(held.modules().loaded_count() == 0);
  held.Release();
  REQUIRE(held.Drain());
  CHECK(held.counters().forms_queued.load() == 1);
  CHECK(held.counters().forms_made.load() == 0);
  CHECK(held.counters().kernels_transformed.load() == 0);
}

// What RecordBlocks writes for each block of `grid`, in linear order: x + 100 y + 10000 z.
std::vector<int> BlockIds(const ptx::Dim3& grid) {
  std::vector<int> ids;
  for (uint32_t z = 0; z < grid.z; ++z) {
    for (uint32_t y = 0; y < grid.y; ++y) {
      for (uint32_t x = 0; x < grid.x; ++x)
        ids.push_back(static_cast<int>(x + 100 * y + 10000 * z));
    }
  }
  return ids;
}

TEST_CASE("Every form runs every block of the grid once, with its original index") {
  const auto module = LoadTestModule();
  const Kernel* kernel = PreparedKernel(*module, "RecordBlocks");
  REQUIRE(kernel->sliced.has_value());
  REQUIRE(kernel->preemptible.has_value());
  Stream stream;
  const ptx::Dim3 grid{5, 3, 2};
  const uint32_t blocks = 30;
  const std::vector<int> ids = BlockIds(grid);
  struct Case {
    LaunchForm form;
    bool preempt = false;
  };
  const Case cases[] = {
      {LaunchForm::Original()},          {LaunchForm::Sliced(1)},
      {LaunchForm::Sliced(4)},           {LaunchForm::Sliced(100)},
      {LaunchForm::Preemptible(1)},      {LaunchForm::Preemptible(3)},
      {LaunchForm::Preemptible(), true}, {LaunchForm::Preemptible(2), true},
  };
  for (const Case& c : cases) {
    INFO("form " << static_cast<int>(c.form.kind) << " slices " << c.form.slices << " workers "
                 << c.form.workers << " preempt " << c.preempt);
    auto dispatcher = MakeDispatcher(scheduler::MakeValidationPolicy(c.form, c.preempt));
    auto queue = dispatcher->AddClient(ClientId(1), ClientPriority::Unset());
    const uint32_t repeats = c.preempt ? 6 : 1;
    for (uint32_t repeat = 1; repeat <= repeats; ++repeat) {
      Ints runs(blocks), block_ids(blocks);
      dispatcher->EnqueueKernel(*queue, TwoBufferLaunch("RecordBlocks", grid, runs, block_ids,
                                                        stream.get()));
      dispatcher->WaitIssued(*queue, repeat);
      CHECK(runs.Download(stream.get()) == std::vector<int>(blocks, 1));
      CHECK(block_ids.Download(stream.get()) == ids);
    }
    const SchedulingStats& stats = dispatcher->stats(*queue);
    const auto count = [&](FormKind kind) { return c.form.kind == kind ? repeats : 0u; };
    CHECK(stats.original == count(FormKind::kOriginal));
    CHECK(stats.sliced == count(FormKind::kSliced));
    CHECK(stats.slices == count(FormKind::kSliced) * std::min(c.form.slices, blocks));
    CHECK(stats.preemptible == count(FormKind::kPreemptible));
    if (c.preempt) {
      // Whether a raised flag stops a run depends on when it lands (with as many workers as
      // tasks, only before they started): resumption itself is checked below, deterministically.
      CHECK(stats.preemptions >= 1u);
    } else {
      CHECK(stats.resumes == 0u);
    }
    CHECK(dispatcher->TakeDeferredError(*queue).result == CUDA_SUCCESS);
    dispatcher->RemoveClient(*queue);
  }
}

// Issues every kernel in slices sized anew at each issue (as priority-budget does): 1 block, then
// 2, then 3, ...
class GrowingSlicesPolicy final : public scheduler::Policy {
 public:
  void ClientJoined(scheduler::Time, ClientId, ClientPriority, scheduler::Decisions&) override {}
  void ClientLeft(scheduler::Time, ClientId, scheduler::Decisions&) override {}
  void PriorityChanged(scheduler::Time, ClientId, ClientPriority, scheduler::Decisions&) override {}
  void HeadArrived(scheduler::Time, ClientId client, const scheduler::Head&,
                   scheduler::Decisions& out) override {
    size_ = 1;
    out.Issue(client, LaunchForm::Slice(size_));
  }
  void RunEnded(scheduler::Time, ClientId client, const scheduler::RunEnd& end,
                scheduler::Decisions& out) override {
    {
      std::lock_guard lock(mutex_);  // the dispatch thread writes, the test reads
      done_.push_back(end.blocks_done);
    }
    if (!end.finished) out.Issue(client, LaunchForm::Slice(++size_));
  }
  void Woken(scheduler::Time, scheduler::Decisions&) override {}
  bool UsesTransformedForms() const override { return true; }
  bool WaitsForForms(ClientId) const override { return true; }
  // The blocks done after each slice.
  std::vector<uint64_t> done() const {
    std::lock_guard lock(mutex_);
    return done_;
  }

 private:
  uint32_t size_ = 1;
  mutable std::mutex mutex_;
  std::vector<uint64_t> done_;
};

TEST_CASE("Slices sized at each issue run every block once, from where the last one ended") {
  const auto module = LoadTestModule();
  PreparedKernel(*module, "RecordBlocks");
  auto owned = std::make_unique<GrowingSlicesPolicy>();
  const GrowingSlicesPolicy& policy = *owned;
  auto dispatcher = MakeDispatcher(std::move(owned));
  auto queue = dispatcher->AddClient(ClientId(1), ClientPriority::Unset());
  Stream stream;
  const ptx::Dim3 grid{5, 3, 2};
  const uint32_t blocks = 30;
  const std::vector<int> ids = BlockIds(grid);
  Ints runs(blocks), block_ids(blocks);
  dispatcher->EnqueueKernel(*queue,
                            TwoBufferLaunch("RecordBlocks", grid, runs, block_ids, stream.get()));
  dispatcher->WaitIssued(*queue, 1);
  CHECK(runs.Download(stream.get()) == std::vector<int>(blocks, 1));
  CHECK(block_ids.Download(stream.get()) == ids);
  // 1 + 2 + ... + 7 = 28 blocks, then the last 2 in a slice asked for 8. The last end reaches
  // the policy at the dispatcher's next poll, which may come after the download.
  CHECK(Eventually(
      [&] { return policy.done() == std::vector<uint64_t>{1, 3, 6, 10, 15, 21, 28, 30}; }));
  const SchedulingStats& stats = dispatcher->stats(*queue);
  CHECK(stats.sliced == 1u);
  CHECK(stats.slices == 8u);
  CHECK(dispatcher->TakeDeferredError(*queue).result == CUDA_SUCCESS);
  dispatcher->RemoveClient(*queue);
}

TEST_CASE("A kernel the analysis refuses runs in its original form") {
  const auto module = LoadTestModule();
  const Kernel* kernel = PreparedKernel(*module, "ReadSmid");
  CHECK_FALSE(kernel->sliced.has_value());
  CHECK_FALSE(kernel->preemptible.has_value());
  for (const LaunchForm& form : {LaunchForm::Sliced(2), LaunchForm::Preemptible(2)}) {
    auto dispatcher = MakeDispatcher(scheduler::MakeValidationPolicy(form, true));
    auto queue = dispatcher->AddClient(ClientId(1), ClientPriority::Unset());
    Stream stream;
    Ints out(4), unused(1);
    dispatcher->EnqueueKernel(*queue,
                              TwoBufferLaunch("ReadSmid", {4, 1, 1}, out, unused, stream.get()));
    dispatcher->WaitIssued(*queue, 1);
    CHECK(out.Download(stream.get()) == std::vector<int>(4, 1));
    CHECK(dispatcher->stats(*queue).original == 1u);
    CHECK(dispatcher->stats(*queue).kernels() == 1u);
    dispatcher->RemoveClient(*queue);
  }
}

TEST_CASE("A high-priority kernel stops a best-effort PTB kernel, which resumes after it") {
  // min_idle is long, so that the stopped kernel cannot resume before the checks in the middle.
  // Four workers for 64 long tasks: most tasks are still to be taken when the flag goes up.
  scheduler::testing::FakeAdvisor advisor;
  advisor.fallback = {LaunchForm::Preemptible(4), true};
  auto dispatcher = MakeDispatcher(scheduler::MakePriorityPolicy(
      {std::chrono::milliseconds(300), std::chrono::seconds(10)}, advisor));
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  auto foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  constexpr uint32_t kSlowBlocks = 64, kFastBlocks = 6;
  Stream slow_stream, fast_stream, probe;
  Ints slow_runs(kSlowBlocks), slow_ids(kSlowBlocks), slow_copy(kSlowBlocks);
  Ints fast_runs(kFastBlocks), fast_ids(kFastBlocks), fast_copy(kFastBlocks);

  dispatcher->EnqueueKernel(*background,
                            TwoBufferLaunch("SlowRecordBlocks", {kSlowBlocks, 1, 1}, slow_runs,
                                            slow_ids, slow_stream.get(), 200'000));
  dispatcher->Enqueue(*background, CopyInts(slow_copy, slow_runs, kSlowBlocks, slow_stream.get()));
  const SchedulingStats& slow_stats = dispatcher->stats(*background);
  REQUIRE(Eventually([&] { return slow_stats.preemptible == 1; }));

  dispatcher->EnqueueKernel(*foreground, TwoBufferLaunch("RecordBlocks", {kFastBlocks, 1, 1},
                                                         fast_runs, fast_ids, fast_stream.get()));
  dispatcher->Enqueue(*foreground, CopyInts(fast_copy, fast_runs, kFastBlocks, fast_stream.get()));
  dispatcher->WaitIssued(*foreground, 2);
  REQUIRE(Api().cuStreamSynchronize(fast_stream.get()) == CUDA_SUCCESS);
  CHECK(fast_copy.Download(probe.get()) == std::vector<int>(kFastBlocks, 1));
  CHECK(dispatcher->stats(*foreground).original == 1u);
  // The background kernel was stopped (not every block ran) and its client's copy is held.
  REQUIRE(Eventually([&] { return slow_stats.preemptions == 1; }));
  CHECK_FALSE(dispatcher->Issued(*background, 1));
  CHECK(slow_copy.Download(probe.get()) == std::vector<int>(kSlowBlocks, 0));

  dispatcher->WaitIssued(*background, 2);
  REQUIRE(Api().cuStreamSynchronize(slow_stream.get()) == CUDA_SUCCESS);
  CHECK(slow_copy.Download(probe.get()) == std::vector<int>(kSlowBlocks, 1));
  CHECK(slow_stats.preempted == 1u);
  CHECK(slow_stats.resumes >= 1u);
  CHECK(slow_stats.preemption_latencies >= 1u);
  CHECK(dispatcher->TakeDeferredError(*background).result == CUDA_SUCCESS);
  dispatcher->RemoveClient(*foreground);
  dispatcher->RemoveClient(*background);
}

std::unique_ptr<KernelRuns> MakeKernelRuns(const Backend& backend) {
  auto runs = KernelRuns::Create(backend, nullptr);
  REQUIRE(runs.ok());
  return *std::move(runs);
}

// Kernel runs of `backend` and a slow kernel of `blocks` blocks for them to run, owned by
// `client`.
struct SlowKernelRuns {
  SlowKernelRuns(const Backend& backend, uint32_t blocks, uint32_t iterations, ClientId client)
      : runs(MakeKernelRuns(backend)),
        done(blocks),
        ids(blocks),
        launch(TwoBufferLaunch("SlowRecordBlocks", {blocks, 1, 1}, done, ids, stream.get(),
                               iterations)),
        owner{client, &stats, &latencies} {}
  std::unique_ptr<KernelRuns> runs;
  Stream stream;
  Ints done, ids;
  KernelLaunch launch;
  SchedulingStats stats;
  ClassLatencyHistograms latencies;
  RunOwner owner;
};

// Records the grid width of every launch, forwarding each to the driver.
struct CountingLaunch {
  static CUresult Call(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                       void** extra) {
    widths.push_back(gx);
    return real(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
  }
  static inline PFN_cuLaunchKernel_v4000 real = nullptr;
  static inline std::vector<unsigned> widths;
};

TEST_CASE("A preempted PTB kernel resumes with the workers its resumption asks for") {
  // priority-budget starts a kernel narrow beside the foreground and resumes it at full width.
  auto backend = Backend::Load(
      {.emulate = true, .device = 0, .emulator_library = TALLY_TEST_EMULATOR_LIBRARY});
  REQUIRE(backend.ok());
  REQUIRE(backend->MakeCurrent().ok());
  DriverApi& api = backend->api_for_testing();
  CountingLaunch::real = api.cuLaunchKernel;
  CountingLaunch::widths.clear();
  api.cuLaunchKernel = &CountingLaunch::Call;
  constexpr uint32_t kBlocks = 16;
  SlowKernelRuns slow(*backend, kBlocks, 200'000, ClientId(3));
  // References, not a structured binding: clang 14 (the asan stage) cannot capture bindings.
  KernelRuns& runs = *slow.runs;
  const KernelLaunch& launch = slow.launch;
  const auto run_ends = [&] {
    std::vector<EndedRun> ended;
    REQUIRE(Eventually([&] {
      runs.Poll(ended);
      return !ended.empty();
    }));
    return ended.front().end;
  };
  REQUIRE(runs.IssueTransformed(slow.owner, launch, LaunchForm::Preemptible(1)) == CUDA_SUCCESS);
  runs.Preempt(ClientId(3));
  const scheduler::RunEnd stopped = run_ends();
  REQUIRE_FALSE(stopped.finished);
  REQUIRE(runs.IssueTransformed(slow.owner, launch, LaunchForm::Preemptible(4)) == CUDA_SUCCESS);
  CHECK(run_ends().finished);
  CHECK(slow.done.Download(slow.stream.get()) == std::vector<int>(kBlocks, 1));
  const std::vector<unsigned> ptb_runs(CountingLaunch::widths.end() - 2,
                                       CountingLaunch::widths.end());
  CHECK(ptb_runs == std::vector<unsigned>{1, 4});
  CHECK(slow.stats.resumes == 1u);
}

TEST_CASE("A sliced kernel forgotten between slices leaves no PTB state to the next kernel") {
  // priority-budget holds a kernel between sized slices while no slice fits beside the
  // foreground, and its client may leave then; the next PTB kernel must still have a state.
  constexpr uint32_t kBlocks = 8;
  SlowKernelRuns sliced(TheDevice().backend, kBlocks, 1, ClientId(5));
  KernelRuns& runs = *sliced.runs;
  std::vector<EndedRun> ended;
  const auto run_ends = [&] {
    ended.clear();
    REQUIRE(Eventually([&] {
      runs.Poll(ended);
      return !ended.empty();
    }));
    return ended.front();
  };
  REQUIRE(runs.IssueTransformed(sliced.owner, sliced.launch, LaunchForm::Slice(2)) == CUDA_SUCCESS);
  REQUIRE_FALSE(run_ends().end.finished);
  runs.Forget(ClientId(5));
  CHECK_FALSE(runs.HasRuns(ClientId(5)));

  Ints done(kBlocks), ids(kBlocks);
  const KernelLaunch ptb =
      TwoBufferLaunch("RecordBlocks", {kBlocks, 1, 1}, done, ids, sliced.stream.get());
  const RunOwner owner{ClientId(6), &sliced.stats, &sliced.latencies};
  REQUIRE(runs.IssueTransformed(owner, ptb, LaunchForm::Preemptible(2)) == CUDA_SUCCESS);
  const EndedRun end = run_ends();
  CHECK(end.end.finished);
  CHECK(end.result == CUDA_SUCCESS);
  CHECK(done.Download(sliced.stream.get()) == std::vector<int>(kBlocks, 1));
  std::vector<int> first_slice(kBlocks, 0);
  first_slice[0] = first_slice[1] = 1;
  CHECK(sliced.done.Download(sliced.stream.get()) == first_slice);
}

TEST_CASE("A reported original-form run ends when it ended on the device, not at its poll") {
  // The poll that finds a run ended may come long after its end (the dispatcher's polls back
  // off); priority-budget times the foreground's kernels from these ends.
  SlowKernelRuns slow(TheDevice().backend, 4, 20'000, ClientId(4));
  const scheduler::Time before = BusyTime::Now();
  REQUIRE(slow.runs->IssueOriginal(slow.owner, slow.launch, /*notify=*/true) == CUDA_SUCCESS);
  REQUIRE(slow.runs->IssueOriginal(slow.owner, slow.launch, /*notify=*/true) == CUDA_SUCCESS);
  REQUIRE(Api().cuStreamSynchronize(slow.stream.get()) == CUDA_SUCCESS);
  const scheduler::Time synchronised = BusyTime::Now();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a late poll
  std::vector<EndedRun> ended;
  slow.runs->Poll(ended);
  REQUIRE(ended.size() == 2);
  REQUIRE(ended[0].ended_at.has_value());
  REQUIRE(ended[1].ended_at.has_value());
  CHECK(before <= *ended[0].ended_at);
  // The second began after the first ended (one stream), and both ended before the stream
  // was found idle.
  CHECK(*ended[0].ended_at <= *ended[1].ended_at);
  CHECK(*ended[1].ended_at <= synchronised);
}

TEST_CASE("A best-effort vendor library call waits while a high-priority kernel runs") {
  // A vendor call cannot be transformed: it runs once every higher level has been idle for
  // long_idle, in its original form, as one unit of its client's queue.
  scheduler::testing::FakeAdvisor advisor;
  advisor.fallback = {LaunchForm::Preemptible(4), true};
  auto dispatcher = MakeDispatcher(scheduler::MakePriorityPolicy(
      {std::chrono::milliseconds(20), std::chrono::milliseconds(200)}, advisor));
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  auto foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  constexpr uint32_t kBlocks = 8;
  Stream slow_stream, call_stream, probe;
  Ints slow_runs(kBlocks), slow_ids(kBlocks), mark(1);
  dispatcher->EnqueueKernel(
      *foreground, TwoBufferLaunch("SlowRecordBlocks", {kBlocks, 1, 1}, slow_runs, slow_ids,
                                   slow_stream.get(), 200'000));
  REQUIRE(Eventually([&] { return dispatcher->stats(*foreground).original == 1; }));

  std::atomic<bool> issued{false}, foreground_done_first{false};
  KernelLaunch call;
  call.vendor = std::make_shared<VendorCall>(
      VendorCall{[&](CUstream stream) {
                   foreground_done_first = Api().cuStreamQuery(slow_stream.get()) == CUDA_SUCCESS;
                   issued = true;
                   return Api().cuMemsetD32Async(mark.address(), 7, 1, stream);
                 },
                 "a vendor call", KernelId(42)});
  call.stream = call_stream.get();
  call.grid = call.block = {1, 1, 1};
  dispatcher->EnqueueKernel(*background, std::move(call));
  dispatcher->WaitIssued(*background, 1);
  CHECK(issued);
  CHECK(foreground_done_first);
  CHECK(mark.Download(probe.get()) == std::vector<int>{7});
  CHECK(dispatcher->stats(*background).original == 0u);  // a library call, counted as such
  CHECK(dispatcher->TakeDeferredError(*background).result == CUDA_SUCCESS);
  dispatcher->RemoveClient(*foreground);
  dispatcher->RemoveClient(*background);
}

TEST_CASE("Busy time counts the runs of clients above best-effort while they are on the device") {
  // Alone, the high-priority client's kernels are issued without notify: they are followed to
  // their end all the same. A best-effort client's runs count nothing.
  scheduler::testing::FakeAdvisor advisor;
  advisor.fallback = {LaunchForm::Preemptible(4), true};
  auto dispatcher = MakeDispatcher(scheduler::MakePriorityPolicy(
      {std::chrono::milliseconds(1), std::chrono::milliseconds(10)}, advisor));
  const auto settled = [&] {  // the runs' ends were polled: the total no longer grows
    const uint64_t before = dispatcher->HighBusyNs();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return dispatcher->HighBusyNs() == before;
  };
  constexpr uint32_t kBlocks = 8;
  Stream stream;
  Ints runs(kBlocks), ids(kBlocks);
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  dispatcher->EnqueueKernel(*background, TwoBufferLaunch("SlowRecordBlocks", {kBlocks, 1, 1}, runs,
                                                         ids, stream.get(), 20'000));
  dispatcher->WaitIssued(*background, 1);
  REQUIRE(Api().cuStreamSynchronize(stream.get()) == CUDA_SUCCESS);
  CHECK(dispatcher->HighBusyNs() == 0u);
  dispatcher->RemoveClient(*background);

  auto foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  const auto start = std::chrono::steady_clock::now();
  dispatcher->EnqueueKernel(*foreground, TwoBufferLaunch("SlowRecordBlocks", {kBlocks, 1, 1}, runs,
                                                         ids, stream.get(), 20'000));
  dispatcher->WaitIssued(*foreground, 1);
  REQUIRE(Api().cuStreamSynchronize(stream.get()) == CUDA_SUCCESS);
  REQUIRE(Eventually(settled));
  const uint64_t busy = dispatcher->HighBusyNs();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(busy > 0u);
  CHECK(busy <= static_cast<uint64_t>(std::chrono::nanoseconds(elapsed).count()));
  CHECK(dispatcher->stats(*foreground).original == 1u);
  dispatcher->RemoveClient(*foreground);
}

TEST_CASE("A client removed while its PTB kernel runs is stopped and never resumed") {
  scheduler::testing::FakeAdvisor advisor;
  advisor.fallback = {LaunchForm::Preemptible(4), true};
  auto dispatcher =
      MakeDispatcher(scheduler::MakePriorityPolicy({std::chrono::milliseconds(1), {}}, advisor));
  auto background = dispatcher->AddClient(ClientId(1), ClientPriority::BestEffort());
  auto foreground = dispatcher->AddClient(ClientId(2), ClientPriority::High());
  constexpr uint32_t kBlocks = 64;
  Stream stream;
  Ints runs(kBlocks), ids(kBlocks);
  dispatcher->EnqueueKernel(*background, TwoBufferLaunch("SlowRecordBlocks", {kBlocks, 1, 1}, runs,
                                                         ids, stream.get(), 200'000));
  const SchedulingStats& stats = dispatcher->stats(*background);
  REQUIRE(Eventually([&] { return stats.preemptible == 1; }));
  const auto start = std::chrono::steady_clock::now();
  dispatcher->RemoveClient(*background);  // returns once its run has stopped
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(Api().cuStreamSynchronize(stream.get()) == CUDA_SUCCESS);
  const std::vector<int> ran = runs.Download(stream.get());
  const int blocks_run = static_cast<int>(std::count(ran.begin(), ran.end(), 1));
  INFO(blocks_run << " blocks ran; removal took "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  CHECK(blocks_run < static_cast<int>(kBlocks));
  CHECK(std::count(ran.begin(), ran.end(), 0) + blocks_run == kBlocks);  // none ran twice
  CHECK(stats.preemptions == 1u);
  CHECK(stats.resumes == 0u);
  dispatcher->RemoveClient(*foreground);
}

// cuEventRecord that answers the shared context's fault after `real_calls` calls: what a kernel
// that faults before the call after its launch does on NVIDIA's driver.
struct FaultingEventRecord {
  static CUresult Call(CUevent event, CUstream stream) {
    if (real_calls-- > 0) return real(event, stream);
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  }
  static inline PFN_cuEventRecord_v2000 real = nullptr;
  static inline int real_calls = 0;
};

TEST_CASE("Where faults are shared, a run launched but not followed names its client as a culprit") {
  auto shared = Backend::Load({.emulate = true,
                               .device = 0,
                               .emulator_library = TALLY_TEST_EMULATOR_LIBRARY,
                               .emulator_tenants = false});
  REQUIRE(shared.ok());
  REQUIRE(shared->FaultsAreShared());
  REQUIRE(shared->MakeCurrent().ok());
  DriverApi& api = shared->api_for_testing();
  FaultingEventRecord::real = api.cuEventRecord;
  api.cuEventRecord = &FaultingEventRecord::Call;
  struct Case {
    LaunchForm form;
    int real_calls;  // a PTB run records its reset event before the launch
  };
  for (const Case& c : {Case{LaunchForm::Original(), 0}, Case{LaunchForm::Sliced(2), 0},
                        Case{LaunchForm::Preemptible(2), 1}}) {
    INFO("form " << static_cast<int>(c.form.kind));
    auto runs = KernelRuns::Create(*shared, nullptr);
    REQUIRE(runs.ok());
    Stream stream;
    Ints a(4), b(4);
    const KernelLaunch launch = TwoBufferLaunch("RecordBlocks", {4, 1, 1}, a, b, stream.get());
    SchedulingStats stats;
    ClassLatencyHistograms latencies;
    const RunOwner owner{ClientId(7), &stats, &latencies};
    FaultingEventRecord::real_calls = c.real_calls;
    const CUresult issued = c.form.kind == FormKind::kOriginal
                                ? (*runs)->IssueOriginal(owner, launch, /*notify=*/true)
                                : (*runs)->IssueTransformed(owner, launch, c.form);
    CHECK(issued == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK((*runs)->first_fault() == CUDA_ERROR_ILLEGAL_ADDRESS);
    absl::flat_hash_set<ClientId> culprits;
    (*runs)->TakeFaultedClients(culprits);
    CHECK(culprits == absl::flat_hash_set<ClientId>{ClientId(7)});
    REQUIRE(Api().cuStreamSynchronize(stream.get()) == CUDA_SUCCESS);
  }
  SECTION("a launch that answered the fault itself did not run: its client is not named") {
    auto runs = KernelRuns::Create(*shared, nullptr);
    REQUIRE(runs.ok());
    api.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) { return CUDA_ERROR_ILLEGAL_ADDRESS; };
    Stream stream;
    Ints a(4), b(4);
    SchedulingStats stats;
    CHECK((*runs)->IssueOriginal({ClientId(7), &stats},
                                 TwoBufferLaunch("RecordBlocks", {4, 1, 1}, a, b, stream.get()),
                                 true) == CUDA_ERROR_ILLEGAL_ADDRESS);
    absl::flat_hash_set<ClientId> culprits;
    (*runs)->TakeFaultedClients(culprits);
    CHECK(culprits.empty());
    CHECK((*runs)->first_fault() == CUDA_SUCCESS);
  }
}

// A page-locked word that a stream can be made to wait for (cuStreamWaitValue32), so that the
// kernel behind it cannot end before the test says so.
class HostGate {
 public:
  HostGate() {
    REQUIRE(Api().cuMemHostAlloc(reinterpret_cast<void**>(&word_), sizeof(uint32_t),
                                 CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS);
    *word_ = 0;
    REQUIRE(Api().cuMemHostGetDevicePointer(&device_, word_, 0) == CUDA_SUCCESS);
  }
  ~HostGate() { Api().cuMemFreeHost(word_); }
  Command Wait(CUstream stream) const {
    return [stream, device = device_] {
      return Api().cuStreamWaitValue32(stream, device, 1, CU_STREAM_WAIT_VALUE_GEQ);
    };
  }
  void Open() { __atomic_store_n(word_, 1u, __ATOMIC_RELEASE); }

 private:
  uint32_t* word_ = nullptr;
  CUdeviceptr device_ = 0;
};

// Client A's queue on a dispatcher with an unfenced gate, client B holding memory, and A's launch
// of RecordBlocks marked as a kernel that cannot be fenced.
struct UnfencedSetup {
  UnfencedSetup(std::chrono::milliseconds wait, std::unique_ptr<scheduler::Policy> policy)
      : gate(wait), dispatcher(MakeDispatcher(std::move(policy), &gate)) {
    queue = dispatcher->AddClient(a, ClientPriority::Unset());
    REQUIRE(gate.HoldMemory(b));
  }
  ~UnfencedSetup() { dispatcher->RemoveClient(*queue); }
  KernelLaunch Launch() const {
    KernelLaunch launch = TwoBufferLaunch("RecordBlocks", {kBlocks, 1, 1}, runs, ids, stream.get());
    launch.unfenced = true;
    return launch;
  }
  const SchedulingStats& stats() const { return dispatcher->stats(*queue); }

  static constexpr uint32_t kBlocks = 8;
  const ClientId a{1}, b{2};
  UnfencedGate gate;
  std::unique_ptr<Dispatcher> dispatcher;
  std::shared_ptr<Dispatcher::ClientQueue> queue;
  Stream stream;
  Ints runs{kBlocks}, ids{kBlocks}, copy{kBlocks};
};

TEST_CASE("An unfenced kernel runs alone: after other clients' memory, before any new memory") {
  struct Case {
    const char* name;
    LaunchForm form;
  };
  for (const Case& c : {Case{"original", LaunchForm::Original()},
                        Case{"preemptible", LaunchForm::Preemptible(2)}}) {
    INFO(c.name);
    UnfencedSetup t(std::chrono::milliseconds(50), scheduler::MakeValidationPolicy(c.form, false));
    HostGate held;
    t.dispatcher->Enqueue(*t.queue, held.Wait(t.stream.get()));
    t.dispatcher->EnqueueKernel(*t.queue, t.Launch());
    t.dispatcher->Enqueue(*t.queue, CopyInts(t.copy, t.runs, t.kBlocks, t.stream.get()));
    REQUIRE(Eventually([&] { return t.stats().unfenced_waiting == 1; }));
    CHECK_FALSE(t.dispatcher->Issued(*t.queue, 2));  // B holds memory: the kernel and the rest wait
    t.gate.ClientLeft(t.b);
    // Admitted: B's memory now waits for the kernel, which cannot end before the word is set.
    REQUIRE(Eventually([&] { return t.stats().unfenced_alone == 1; }));
    CHECK(t.stats().unfenced_waiting == 0);
    CHECK_FALSE(t.gate.HoldMemory(t.b));
    held.Open();
    t.dispatcher->WaitIssued(*t.queue, 3);
    CHECK(t.copy.Download(t.stream.get()) == std::vector<int>(t.kBlocks, 1));
    CHECK(Eventually([&] { return t.gate.HoldMemory(t.b); }));  // once the kernel has ended
    CHECK(t.dispatcher->TakeDeferredError(*t.queue).result == CUDA_SUCCESS);
  }
}

TEST_CASE("An unfenced kernel that waits past the gate's wait fails, and the queue goes on") {
  UnfencedSetup t(std::chrono::milliseconds(20), scheduler::MakeFifoPolicy());
  t.dispatcher->EnqueueKernel(*t.queue, t.Launch());
  t.dispatcher->Enqueue(*t.queue, CopyInts(t.copy, t.ids, t.kBlocks, t.stream.get()));
  t.dispatcher->WaitIssued(*t.queue, 2);
  const DeferredError error = t.dispatcher->TakeDeferredError(*t.queue);
  CHECK(error.result == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(error.what.find("kernel RecordBlocks (it cannot be fenced") != std::string::npos);
  CHECK(error.what.find("20 ms") != std::string::npos);
  CHECK(t.runs.Download(t.stream.get()) == std::vector<int>(t.kBlocks, 0));  // it never ran
  CHECK(t.stats().unfenced_refused == 1);
  CHECK(t.stats().unfenced_alone == 0);
  CHECK(t.stats().unfenced_waiting == 0);
  CHECK(t.gate.TryAdmit(t.b));  // A was never admitted
  t.gate.End(t.b);
}

}  // namespace
}  // namespace tally::server
