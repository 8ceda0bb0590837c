// The run-end watcher on the emulated GPU: it wakes once what a stream had queued when it was
// asked to watch has run, watches one run at a time, watches again once woken, and its
// destruction does not hang on a run that does not end.
#include "server/run_end_watcher.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <future>

#include "ipc/testing/eventually.h"

namespace tally::server {
namespace {

using ipc::testing::Eventually;

Backend& TheBackend() {
  static Backend* backend = new Backend(*Backend::Load(
      {.emulate = true, .device = 0, .emulator_library = TALLY_TEST_EMULATOR_LIBRARY}));
  return *backend;
}

// A stream whose work waits for the test to open its gate (a host function that blocks).
class GatedStream {
 public:
  GatedStream() {
    const DriverApi& api = TheBackend().api();
    REQUIRE(api.cuStreamCreateWithPriority(&stream_, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS);
    REQUIRE(api.cuLaunchHostFunc(stream_, &Wait, &opened_) == CUDA_SUCCESS);
  }
  ~GatedStream() {
    Open();
    TheBackend().api().cuStreamSynchronize(stream_);
    TheBackend().api().cuStreamDestroy(stream_);
  }
  void Open() {
    if (!open_) opened_.set_value();
    open_ = true;
  }
  CUstream get() const { return stream_; }

 private:
  static void Wait(void* opened) { static_cast<std::promise<void>*>(opened)->get_future().wait(); }
  CUstream stream_ = nullptr;
  std::promise<void> opened_;
  bool open_ = false;
};

struct Watcher {
  Watcher()
      : watcher(
            TheBackend().api(), [] { TheBackend().MakeCurrent().IgnoreError(); },
            [this] { ++wakes; }) {}
  std::atomic<int> wakes{0};
  RunEndWatcher watcher;
};

TEST_CASE("The watcher wakes once the watched work has run, and watches one run at a time") {
  REQUIRE(TheBackend().MakeCurrent().ok());
  Watcher w;
  GatedStream first;
  GatedStream second;
  REQUIRE(w.watcher.Watch(first.get()));
  CHECK_FALSE(w.watcher.Watch(second.get()));  // busy with the first
  CHECK(w.wakes == 0);                         // the first stream's gate is closed
  first.Open();
  REQUIRE(Eventually([&] { return w.wakes == 1; }));
  // Woken, it watches again.
  REQUIRE(Eventually([&] { return w.watcher.Watch(second.get()); }));
  second.Open();
  REQUIRE(Eventually([&] { return w.wakes == 2; }));
}

TEST_CASE("A watcher whose run does not end is left waiting by its destructor, which returns") {
  REQUIRE(TheBackend().MakeCurrent().ok());
  GatedStream stuck;
  std::atomic<int> wakes{0};
  {
    RunEndWatcher watcher(
        TheBackend().api(), [] { TheBackend().MakeCurrent().IgnoreError(); }, [&] { ++wakes; });
    REQUIRE(watcher.Watch(stuck.get()));
  }
  CHECK(wakes == 0);
  stuck.Open();  // the left thread's wait ends; it wakes no one and touches nothing destroyed
}

}  // namespace
}  // namespace tally::server
