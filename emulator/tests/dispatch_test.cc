// Device-wide block dispatch, observed through what every block records: %globaltimer when it
// started and when it ended, and %smid. A block's stamps lie within the time it was resident, so
// "X ended before Y started" holds whenever X's end was what let Y be dispatched; these facts are
// checked with any number of host threads. That blocks start in dispatch order holds only with
// one host thread (TALLY_EMU_HOST_THREADS=1, the emu_dispatch_serial_test run); those facts are
// checked there.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

constexpr unsigned kThreads = 32;
constexpr unsigned kHalfSm = 80 * 1024;  // dynamic shared memory: two blocks per SM
constexpr uint64_t kMs = 1000000;

struct Stamp {
  uint64_t start, end;
  uint32_t sm, unused;
};

bool OneHostThread() {
  const char* threads = std::getenv("TALLY_EMU_HOST_THREADS");
  return threads != nullptr && std::string(threads) == "1";
}

unsigned SmCount() {
  int sms = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  return static_cast<unsigned>(sms);
}

// Dynamic shared memory with which one block of `kernel` fills an SM's shared memory.
unsigned FullSm(CUfunction kernel) {
  int static_shared = 0, optin = 0;
  EMU_OK(Emu().cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel));
  EMU_OK(
      Emu().cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
  return static_cast<unsigned>(optin - static_shared);
}

// Kernel `name` of kernels/dispatch.cu, allowed the most dynamic shared memory a block may have.
CUfunction Kernel(const char* name) {
  static std::map<std::string, CUfunction> kernels;
  CUfunction& kernel = kernels[name];
  if (kernel == nullptr) {
    kernel = KernelFrom("dispatch", name);
    EMU_OK(Emu().cuFuncSetAttribute(kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    FullSm(kernel)));
  }
  return kernel;
}

CUstream NewStream(int priority) {
  CUstream stream = nullptr;
  EMU_OK(Emu().cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, priority));
  return stream;
}

// Waits until the counter reaches `value` with a stream memory wait of its own: its atomic reads
// do not race with the kernel's atomics, as a copy's would.
void AwaitCount(CUdeviceptr counter, unsigned value) {
  CUstream stream = NewStream(0);
  EMU_OK(Emu().cuStreamWaitValue32_v2(stream, counter, value, CU_STREAM_WAIT_VALUE_GEQ));
  EMU_OK(Emu().cuStreamSynchronize(stream));
  EMU_OK(Emu().cuStreamDestroy_v2(stream));
}

// A launch of `timed`: `blocks` blocks of kThreads threads with `shared` bytes of dynamic shared
// memory, each resident for `ns` nanoseconds.
class Timed {
 public:
  Timed(unsigned blocks, unsigned shared, uint64_t ns)
      : blocks_(blocks),
        shared_(shared),
        ns_(ns),
        stamps_(Zeros<Stamp>(blocks)),
        started_(Zeros<unsigned>(1)) {}
  void Launch(CUstream stream) {
    void* args[] = {&stamps_, &ns_, &started_};
    EMU_OK(Emu().cuLaunchKernel(Kernel("timed"), blocks_, 1, 1, kThreads, 1, 1, shared_, stream,
                                args, nullptr));
  }
  // Until its first block started: its first blocks are then resident.
  void AwaitStart() const { AwaitCount(started_, 1); }
  std::vector<Stamp> Stamps() const { return Download<Stamp>(stamps_, blocks_); }

 private:
  unsigned blocks_, shared_;
  uint64_t ns_;
  CUdeviceptr stamps_, started_;
};

uint64_t FirstStart(const std::vector<Stamp>& stamps) {
  return std::min_element(stamps.begin(), stamps.end(),
                          [](const Stamp& a, const Stamp& b) { return a.start < b.start; })
      ->start;
}

uint64_t LastStart(const std::vector<Stamp>& stamps) {
  return std::max_element(stamps.begin(), stamps.end(),
                          [](const Stamp& a, const Stamp& b) { return a.start < b.start; })
      ->start;
}

uint64_t LastEnd(const std::vector<Stamp>& stamps) {
  return std::max_element(stamps.begin(), stamps.end(),
                          [](const Stamp& a, const Stamp& b) { return a.end < b.end; })
      ->end;
}

size_t EndedBefore(const std::vector<Stamp>& stamps, uint64_t time) {
  return std::count_if(stamps.begin(), stamps.end(), [&](const Stamp& s) { return s.end < time; });
}

bool Overlap(const Stamp& a, const Stamp& b) { return a.start <= b.end && b.start <= a.end; }

// The most blocks whose stamps overlap one block's start: never more than were resident at once.
size_t MostAtOnce(const std::vector<Stamp>& stamps) {
  size_t most = 0;
  for (const Stamp& at : stamps) {
    most = std::max<size_t>(most, std::count_if(stamps.begin(), stamps.end(), [&](const Stamp& s) {
                              return s.start <= at.start && at.start <= s.end;
                            }));
  }
  return most;
}

std::vector<Stamp> Both(std::vector<Stamp> a, const std::vector<Stamp>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Launches `first` on a stream of priority `first_priority` and, once its first blocks are
// resident, `second` on a stream of priority `second_priority`; returns when both are done.
void WhileRunning(Timed& first, int first_priority, int second_priority,
                  const std::function<void(CUstream)>& second) {
  CUstream first_stream = NewStream(first_priority), second_stream = NewStream(second_priority);
  first.Launch(first_stream);
  first.AwaitStart();
  second(second_stream);
  EMU_OK(Emu().cuStreamSynchronize(second_stream));
  EMU_OK(Emu().cuStreamSynchronize(first_stream));
  EMU_OK(Emu().cuStreamDestroy_v2(first_stream));
  EMU_OK(Emu().cuStreamDestroy_v2(second_stream));
}

TEST_CASE("equal priorities: a launch waits until every block of an earlier one was dispatched") {
  EnsureContext();
  const unsigned capacity = 2 * SmCount();  // blocks with kHalfSm the device holds at once
  Timed earlier(8 * capacity, kHalfSm, 4 * kMs), later(4, kHalfSm, 0);
  WhileRunning(earlier, 0, 0, [&](CUstream stream) { later.Launch(stream); });
  const std::vector<Stamp> e = earlier.Stamps(), l = later.Stamps();
  // The later launch's first block took room that a block of the earlier one left after the
  // earlier launch's last block had been dispatched.
  CHECK(EndedBefore(e, FirstStart(l)) >= e.size() - capacity + 1);
  if (OneHostThread()) CHECK(LastStart(e) < FirstStart(l));
  CHECK(MostAtOnce(Both(e, l)) <= capacity);
}

TEST_CASE("a higher-priority launch overtakes waiting blocks but does not preempt running ones") {
  EnsureContext();
  int least = 0, greatest = 0;
  EMU_OK(Emu().cuCtxGetStreamPriorityRange(&least, &greatest));
  REQUIRE(greatest < least);
  const unsigned capacity = 2 * SmCount();
  Timed background(16 * capacity, kHalfSm, 8 * kMs), urgent(4, kHalfSm, 0);
  WhileRunning(background, least, greatest, [&](CUstream stream) { urgent.Launch(stream); });
  const std::vector<Stamp> b = background.Stamps(), u = urgent.Stamps();
  // The device was full: the urgent blocks waited until running blocks ended.
  CHECK(EndedBefore(b, FirstStart(u)) >= 1);
  // They were dispatched before the background launch's waiting blocks (which had 15 waves
  // left when they arrived).
  if (OneHostThread()) CHECK(LastStart(u) < LastStart(b));
  CHECK(MostAtOnce(Both(b, u)) <= capacity);
}

TEST_CASE("blocks of different launches share an SM when both fit") {
  EnsureContext();
  const unsigned sms = SmCount();
  CUdeviceptr wide_stamps = Zeros<Stamp>(sms), small_stamps = Zeros<Stamp>(sms),
              arrived = Zeros<unsigned>(1), timed_out = Zeros<unsigned>(1);
  unsigned expected = 2 * sms;
  uint64_t timeout = 20000 * kMs;
  void* wide_args[] = {&wide_stamps, &arrived, &expected, &timeout, &timed_out};
  void* small_args[] = {&small_stamps, &arrived, &expected, &timeout, &timed_out};
  CUstream first = NewStream(0), second = NewStream(0);
  // 100 KiB of shared memory: one wide block per SM, with room beside it for a small block.
  EMU_OK(Emu().cuLaunchKernel(Kernel("meet"), sms, 1, 1, kThreads, 1, 1, 100 * 1024, first,
                              wide_args, nullptr));
  EMU_OK(Emu().cuLaunchKernel(Kernel("meet"), sms, 1, 1, kThreads, 1, 1, 0, second, small_args,
                              nullptr));
  EMU_OK(Emu().cuStreamSynchronize(first));
  EMU_OK(Emu().cuStreamSynchronize(second));
  REQUIRE(Download<unsigned>(timed_out, 1)[0] == 0);  // all blocks were resident at once
  const std::vector<Stamp> wide = Download<Stamp>(wide_stamps, sms),
                           small = Download<Stamp>(small_stamps, sms);
  std::vector<unsigned> wide_per_sm(sms, 0);
  for (const Stamp& w : wide) ++wide_per_sm.at(w.sm);
  CHECK(wide_per_sm == std::vector<unsigned>(sms, 1));
  for (const Stamp& s : small) {
    CHECK(std::any_of(wide.begin(), wide.end(),
                      [&](const Stamp& w) { return w.sm == s.sm && Overlap(w, s); }));
  }
  EMU_OK(Emu().cuStreamDestroy_v2(first));
  EMU_OK(Emu().cuStreamDestroy_v2(second));
}

TEST_CASE("a block that needs all of an SM's shared memory has the SM to itself") {
  EnsureContext();
  const unsigned sms = SmCount();
  Timed whole(sms, FullSm(Kernel("timed")), 20 * kMs), small(sms, 0, 0);
  WhileRunning(whole, 0, 0, [&](CUstream stream) { small.Launch(stream); });
  const std::vector<Stamp> w = whole.Stamps(), s = small.Stamps();
  for (const Stamp& a : w) {
    for (const Stamp& b : s) CHECK_FALSE((a.sm == b.sm && Overlap(a, b)));
  }
  CHECK(EndedBefore(w, FirstStart(s)) >= 1);
}

TEST_CASE("a cooperative grid waits until all of it fits, then runs co-resident") {
  EnsureContext();
  const unsigned sms = SmCount(), grid = 2 * sms;  // kHalfSm blocks: the whole device
  Timed blocker(sms / 2, FullSm(Kernel("timed")), 20 * kMs);
  CUdeviceptr stamps = Zeros<Stamp>(grid), sum = Zeros<unsigned>(1), totals = Zeros<unsigned>(grid);
  void* args[] = {&stamps, &sum, &totals};
  WhileRunning(blocker, 0, 0, [&](CUstream stream) {
    EMU_OK(Emu().cuLaunchCooperativeKernel(Kernel("grid_sum"), grid, 1, 1, kThreads, 1, 1, kHalfSm,
                                           stream, args));
  });
  CHECK(Download<unsigned>(totals, grid) == std::vector<unsigned>(grid, grid * (grid + 1) / 2));
  const std::vector<Stamp> c = Download<Stamp>(stamps, grid);
  CHECK(FirstStart(c) > LastEnd(blocker.Stamps()));
  CHECK(MostAtOnce(c) == grid);
}

TEST_CASE("a cluster waits for room for all its CTAs, which run co-resident") {
  EnsureContext();
  const unsigned sms = SmCount(), grid = 16, cluster = 4;
  Timed blocker(sms, FullSm(Kernel("timed")), 20 * kMs);  // every SM taken
  CUdeviceptr stamps = Zeros<Stamp>(grid), seen = Zeros<unsigned>(grid);
  void* args[] = {&stamps, &seen};
  WhileRunning(blocker, 0, 0, [&](CUstream stream) {
    EMU_OK(Emu().cuLaunchKernel(Kernel("cluster_ring"), grid, 1, 1, kThreads, 1, 1, kHalfSm, stream,
                                args, nullptr));
  });
  const std::vector<unsigned> values = Download<unsigned>(seen, grid);
  for (unsigned b = 0; b < grid; ++b) {
    const unsigned next = (b % cluster + 1) % cluster;
    CHECK(values[b] == 1000 * (b - b % cluster + next) + next);
  }
  const std::vector<Stamp> c = Download<Stamp>(stamps, grid);
  // Two CTAs per SM: a cluster needed two SMs that blocker blocks had left.
  CHECK(EndedBefore(blocker.Stamps(), FirstStart(c)) >= cluster / 2);
  for (unsigned first_cta = 0; first_cta < grid; first_cta += cluster) {
    const std::vector<Stamp> one(c.begin() + first_cta, c.begin() + first_cta + cluster);
    CHECK(MostAtOnce(one) == cluster);
  }
}

TEST_CASE("a cluster larger than the device holds is refused") {
  EnsureContext();
  if (SmCount() >= 16) return;
  // 16 CTAs of a whole SM each must be resident together: more than the SMs hold.
  CUfunction timed = KernelFrom("dispatch", "timed");
  const unsigned whole = FullSm(timed);
  EMU_OK(Emu().cuFuncSetAttribute(timed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, whole));
  EMU_OK(Emu().cuFuncSetAttribute(timed, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
  CUdeviceptr stamps = Zeros<Stamp>(16), started = Zeros<unsigned>(1);
  uint64_t ns = 0;
  void* args[] = {&stamps, &ns, &started};
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = 16;
  attribute.value.clusterDim.y = attribute.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = 16;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = whole;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK(Emu().cuLaunchKernelEx(&config, timed, args, nullptr) ==
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  config.sharedMemBytes = 0;  // 16 small CTAs fit
  EMU_OK(Emu().cuLaunchKernelEx(&config, timed, args, nullptr));
  EMU_OK(Emu().cuCtxSynchronize());
  CHECK(Download<unsigned>(started, 1)[0] == 16);
}

}  // namespace
}  // namespace tally::emu::testing
