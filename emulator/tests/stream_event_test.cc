// Ordering guarantees of streams, events and host callbacks, legacy default-stream semantics,
// and errors for bad stream/event handles.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

using namespace std::chrono_literals;

// A host function that blocks its stream until the test opens the gate.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  bool entered = false;  // a host function waits at the gate
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  static void Wait(void* self) {
    auto* gate = static_cast<Gate*>(self);
    std::unique_lock lock(gate->mu);
    gate->entered = true;
    gate->cv.notify_all();
    gate->cv.wait(lock, [&] { return gate->open; });
  }
  // Until a host function waits at the gate (it has left its stream's queue).
  void AwaitEntered() {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
};

// Records the order in which host functions ran.
class Trace {
 public:
  // userData for a host function that appends `value`.
  void* Mark(int value) { return &marks_.emplace_back(Entry{this, value}); }
  static void Append(void* data) {
    auto* entry = static_cast<Entry*>(data);
    std::lock_guard lock(entry->trace->mu_);
    entry->trace->order_.push_back(entry->value);
  }
  // Appends `value` from the test itself, e.g. just before it opens a gate: whatever the gate
  // held back must come after it in the order.
  void Record(int value) {
    std::lock_guard lock(mu_);
    order_.push_back(value);
  }
  std::vector<int> order() {
    std::lock_guard lock(mu_);
    return order_;
  }
  bool Has(int value) {
    std::lock_guard lock(mu_);
    for (int v : order_)
      if (v == value) return true;
    return false;
  }

 private:
  struct Entry {
    Trace* trace;
    int value;
  };
  std::mutex mu_;
  std::vector<int> order_;
  std::deque<Entry> marks_;
};

// True once `condition` holds, false if it does not within ten seconds (a loaded CI machine).
template <typename Condition>
bool Eventually(Condition condition) {
  for (int i = 0; i < 10000; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// The scheduler state of thread `tid` of this process (proc(5): 'R' running, 'S' asleep, ...).
char ThreadState(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  const std::string text{std::istreambuf_iterator<char>(stat), {}};
  const size_t name_end = text.rfind(')');  // the thread's name may hold spaces and parentheses
  return name_end == std::string::npos || name_end + 2 >= text.size() ? '?' : text[name_end + 2];
}

TEST_CASE("work in one stream runs in issue order, interleaved copies included") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr device = 0;
  EMU_OK(emu.cuMemAlloc_v2(&device, 4));
  Trace trace;
  std::vector<uint32_t> seen(20);
  for (int i = 0; i < 20; ++i) {
    EMU_OK(emu.cuMemsetD32Async(device, i, 1, stream));
    EMU_OK(emu.cuMemcpyDtoHAsync_v2(&seen[i], device, 4, stream));
    EMU_OK(emu.cuLaunchHostFunc(stream, Trace::Append, trace.Mark(i)));
  }
  EMU_OK(emu.cuStreamSynchronize(stream));
  for (int i = 0; i < 20; ++i) CHECK(seen[i] == static_cast<uint32_t>(i));
  std::vector<int> expected(20);
  for (int i = 0; i < 20; ++i) expected[i] = i;
  CHECK(trace.order() == expected);
  CHECK(emu.cuStreamQuery(stream) == CUDA_SUCCESS);
  EMU_OK(emu.cuStreamDestroy_v2(stream));
  EMU_OK(emu.cuMemFree_v2(device));
}

TEST_CASE("legacy NULL stream waits for blocking streams and vice versa") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream blocking = nullptr;
  EMU_OK(emu.cuStreamCreate(&blocking, CU_STREAM_DEFAULT));

  SECTION("NULL-stream work waits for earlier work of a blocking stream") {
    Gate gate;
    Trace trace;
    EMU_OK(emu.cuLaunchHostFunc(blocking, Gate::Wait, &gate));
    EMU_OK(emu.cuLaunchHostFunc(nullptr, Trace::Append, trace.Mark(1)));
    CHECK(emu.cuStreamQuery(blocking) == CUDA_ERROR_NOT_READY);
    trace.Record(0);
    gate.Open();
    EMU_OK(emu.cuStreamSynchronize(nullptr));
    CHECK(trace.order() == std::vector{0, 1});  // 1 ran only after the gate opened
  }
  SECTION("blocking-stream work waits for earlier NULL-stream work") {
    Gate gate;
    Trace trace;
    EMU_OK(emu.cuLaunchHostFunc(CU_STREAM_LEGACY, Gate::Wait, &gate));
    EMU_OK(emu.cuLaunchHostFunc(blocking, Trace::Append, trace.Mark(2)));
    trace.Record(0);
    gate.Open();
    EMU_OK(emu.cuStreamSynchronize(blocking));
    CHECK(trace.order() == std::vector{0, 2});
  }
  SECTION("cuStreamSynchronize(NULL) also waits for blocking streams") {
    Gate gate;
    Trace trace;
    EMU_OK(emu.cuLaunchHostFunc(blocking, Gate::Wait, &gate));
    EMU_OK(emu.cuLaunchHostFunc(blocking, Trace::Append, trace.Mark(3)));
    std::thread opener([&] {
      std::this_thread::sleep_for(20ms);
      gate.Open();
    });
    EMU_OK(emu.cuStreamSynchronize(nullptr));
    CHECK(trace.Has(3));
    opener.join();
  }
  EMU_OK(emu.cuStreamDestroy_v2(blocking));
}

TEST_CASE("non-blocking streams do not synchronise with the NULL stream") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream independent = nullptr;
  EMU_OK(emu.cuStreamCreate(&independent, CU_STREAM_NON_BLOCKING));
  Gate gate;
  Trace trace;
  EMU_OK(emu.cuLaunchHostFunc(independent, Gate::Wait, &gate));
  EMU_OK(emu.cuLaunchHostFunc(nullptr, Trace::Append, trace.Mark(1)));
  CHECK(Eventually([&] { return trace.Has(1); }));
  // And the other way round.
  Gate null_gate;
  EMU_OK(emu.cuLaunchHostFunc(nullptr, Gate::Wait, &null_gate));
  gate.Open();
  EMU_OK(emu.cuLaunchHostFunc(independent, Trace::Append, trace.Mark(2)));
  CHECK(Eventually([&] { return trace.Has(2); }));
  null_gate.Open();
  EMU_OK(emu.cuCtxSynchronize());
  EMU_OK(emu.cuStreamDestroy_v2(independent));
}

TEST_CASE("events order streams and time work") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream producer = nullptr, consumer = nullptr;
  EMU_OK(emu.cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING));
  CUevent start = nullptr, done = nullptr, untimed = nullptr;
  EMU_OK(emu.cuEventCreate(&start, CU_EVENT_DEFAULT));
  EMU_OK(emu.cuEventCreate(&done, CU_EVENT_BLOCKING_SYNC));
  EMU_OK(emu.cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  float ms = 0;
  CHECK(emu.cuEventQuery(done) == CUDA_SUCCESS);  // never recorded
  CHECK(emu.cuEventElapsedTime_v2(&ms, start, done) == CUDA_ERROR_INVALID_HANDLE);

  Gate gate;
  Trace trace;
  EMU_OK(emu.cuEventRecord(start, producer));
  EMU_OK(emu.cuLaunchHostFunc(producer, Gate::Wait, &gate));
  // Between the two records the stream certainly spends 20 ms, however it is scheduled.
  EMU_OK(emu.cuLaunchHostFunc(
      producer, [](void*) { std::this_thread::sleep_for(20ms); }, nullptr));
  EMU_OK(emu.cuEventRecord(done, producer));
  EMU_OK(emu.cuEventRecord(untimed, producer));
  EMU_OK(emu.cuStreamWaitEvent(consumer, done, 0));
  EMU_OK(emu.cuLaunchHostFunc(consumer, Trace::Append, trace.Mark(1)));
  CHECK(emu.cuEventQuery(done) == CUDA_ERROR_NOT_READY);
  CHECK(emu.cuEventElapsedTime_v2(&ms, start, done) == CUDA_ERROR_NOT_READY);
  trace.Record(0);
  gate.Open();
  EMU_OK(emu.cuEventSynchronize(done));
  CHECK(emu.cuEventQuery(done) == CUDA_SUCCESS);
  EMU_OK(emu.cuStreamSynchronize(consumer));
  CHECK(trace.order() == std::vector{0, 1});  // the consumer waited for the event
  EMU_OK(emu.cuEventElapsedTime_v2(&ms, start, done));
  CHECK(ms >= 19.5f);
  CHECK(emu.cuEventElapsedTime_v2(&ms, start, untimed) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuStreamWaitEvent(consumer, done, 5) == CUDA_ERROR_INVALID_VALUE);

  for (CUevent event : {start, done, untimed}) EMU_OK(emu.cuEventDestroy_v2(event));
  CHECK(emu.cuEventQuery(done) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuEventRecord(done, producer) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuEventDestroy_v2(done) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuEventCreate(&start, 0x80) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuStreamDestroy_v2(producer));
  EMU_OK(emu.cuStreamDestroy_v2(consumer));
}

struct CallbackRecord {
  CUstream stream = nullptr;
  CUresult status = CUDA_ERROR_UNKNOWN;
  static void Callback(CUstream stream, CUresult status, void* self) {
    auto* record = static_cast<CallbackRecord*>(self);
    record->stream = stream;
    record->status = status;
  }
};

TEST_CASE("stream callbacks see their stream and status") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreateWithPriority(&stream, 0, -100));
  int priority = 0;
  EMU_OK(emu.cuStreamGetPriority(stream, &priority));
  CHECK(priority == -5);  // clamped to the greatest priority
  CallbackRecord record;
  EMU_OK(emu.cuStreamAddCallback(stream, CallbackRecord::Callback, &record, 0));
  EMU_OK(emu.cuStreamSynchronize(stream));
  CHECK(record.stream == stream);
  CHECK(record.status == CUDA_SUCCESS);
  CHECK(emu.cuStreamAddCallback(stream, CallbackRecord::Callback, &record, 1) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamAddCallback(stream, nullptr, &record, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuLaunchHostFunc(stream, nullptr, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuStreamDestroy_v2(stream));
}

TEST_CASE("bad stream handles are INVALID_HANDLE; destroy keeps queued work") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream stream = nullptr;
  CHECK(emu.cuStreamCreate(&stream, 0x10) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuStreamCreate(nullptr, 0) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuStreamCreate(&stream, 0));
  Gate gate;
  Trace trace;
  EMU_OK(emu.cuLaunchHostFunc(stream, Gate::Wait, &gate));
  EMU_OK(emu.cuLaunchHostFunc(stream, Trace::Append, trace.Mark(1)));
  EMU_OK(emu.cuStreamDestroy_v2(stream));  // returns at once
  CHECK(emu.cuStreamSynchronize(stream) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuStreamQuery(stream) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuStreamDestroy_v2(stream) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuLaunchHostFunc(stream, Trace::Append, trace.Mark(2)) == CUDA_ERROR_INVALID_HANDLE);
  CUstream forged = reinterpret_cast<CUstream>(0xdeadbeef);
  CHECK(emu.cuStreamSynchronize(forged) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuMemsetD8Async(0, 0, 0, forged) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuStreamDestroy_v2(nullptr) == CUDA_ERROR_INVALID_HANDLE);
  CUevent event = nullptr;
  EMU_OK(emu.cuEventCreate(&event, 0));
  CHECK(emu.cuEventRecord(event, forged) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(emu.cuStreamWaitEvent(forged, event, 0) == CUDA_ERROR_INVALID_HANDLE);
  EMU_OK(emu.cuEventDestroy_v2(event));

  // The destroyed stream's queued work still runs, and NULL-stream work still waits for it.
  gate.Open();
  EMU_OK(emu.cuStreamSynchronize(nullptr));
  CHECK(trace.Has(1));
}

TEST_CASE("a full stream blocks the enqueuer until its work drains, other streams do not") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream full = nullptr;
  CUstream other = nullptr;
  EMU_OK(emu.cuStreamCreate(&full, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  Gate gate;
  EMU_OK(emu.cuLaunchHostFunc(full, Gate::Wait, &gate));  // running, holds everything behind
  // Running, not queued: on a busy machine the stream's worker may take it late, and the bound
  // below counts what is queued.
  gate.AwaitEntered();
  constexpr int kTotal = 5000;  // more than the stream holds (kMaxQueuedWork, 4096)
  std::atomic<int> enqueued{0};
  std::atomic<pid_t> flood_thread{0};
  std::thread flood([&] {
    flood_thread = gettid();
    for (int i = 0; i < kTotal; ++i) {
      if (emu.cuLaunchHostFunc(full, [](void*) {}, nullptr) != CUDA_SUCCESS) return;
      ++enqueued;
    }
  });
  // Whatever fails below, the flood thread ends before the test does.
  struct Finish {
    Gate& gate;
    std::thread& flood;
    ~Finish() {
      gate.Open();
      flood.join();
    }
  } finish{gate, flood};
  // The enqueuer stops at the bound: 4096 queued behind the gate, the 4097th call blocked.
  // The enqueuer stops at the bound: 4096 queued behind the gate, the 4097th call asleep in the
  // driver. Without the bound it would run on to kTotal without ever sleeping: wait for either.
  CHECK(Eventually([&] {
    const int queued = enqueued.load();
    return queued >= kTotal || (queued >= 4096 && ThreadState(flood_thread) == 'S');
  }));
  CHECK(enqueued.load() == 4096);
  // Other streams are not held up by the full one.
  Trace trace;
  EMU_OK(emu.cuLaunchHostFunc(other, Trace::Append, trace.Mark(7)));
  EMU_OK(emu.cuStreamSynchronize(other));
  CHECK(trace.Has(7));
  gate.Open();
  for (int i = 0; i < 60000 && enqueued.load() < kTotal; ++i) std::this_thread::sleep_for(1ms);
  CHECK(enqueued.load() == kTotal);
  EMU_OK(emu.cuStreamSynchronize(full));
  EMU_OK(emu.cuStreamDestroy_v2(full));
  EMU_OK(emu.cuStreamDestroy_v2(other));
}

}  // namespace
}  // namespace tally::emu::testing
