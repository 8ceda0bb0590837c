// The extensions a sharing server uses (tally_emu_ext.h): cancelling a dead client's stream.
#include <dlfcn.h>

#include <chrono>
#include <thread>

// First: it defines what the CUDA headers need for the tests' versioned names.
#include "emulator/tests/kernel_util.h"
//
#include "emulator/tally_emu_ext.h"

namespace tally::emu::testing {
namespace {

using namespace std::chrono_literals;

template <typename T>
T Extension(const char* name) {
  auto* symbol = reinterpret_cast<T>(dlsym(Emu().library, name));
  INFO(name);
  REQUIRE(symbol != nullptr);
  return symbol;
}

// *counter as another stream sees it now.
unsigned ReadCounter(CUdeviceptr counter, CUstream reader) {
  unsigned value = 0;
  EMU_OK(Emu().cuMemcpyDtoHAsync_v2(&value, counter, sizeof(value), reader));
  EMU_OK(Emu().cuStreamSynchronize(reader));
  return value;
}

TEST_CASE("a cancelled stream stops its running grid, skips later launches, releases waiters") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const auto cancel = Extension<PFN_tallyEmuStreamCancel>("tallyEmuStreamCancel");
  const CUfunction count = KernelFrom("tenant", "count_blocks");
  CUstream doomed = nullptr;
  CUstream reader = nullptr;
  EMU_OK(emu.cuStreamCreate(&doomed, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuStreamCreate(&reader, CU_STREAM_NON_BLOCKING));
  const CUdeviceptr first = Zeros<unsigned>(1);
  const CUdeviceptr second = Zeros<unsigned>(1);
  constexpr unsigned kBlocks = 20000;
  int iterations = 20000;
  CUdeviceptr target = first;
  void* args[] = {&target, &iterations};
  EMU_OK(emu.cuLaunchKernel(count, kBlocks, 1, 1, 32, 1, 1, 0, doomed, args, nullptr));
  target = second;  // the parameters are copied at the launch
  EMU_OK(emu.cuLaunchKernel(count, kBlocks, 1, 1, 32, 1, 1, 0, doomed, args, nullptr));
  CUevent after = nullptr;
  EMU_OK(emu.cuEventCreate(&after, CU_EVENT_DISABLE_TIMING));
  EMU_OK(emu.cuEventRecord(after, doomed));
  for (int i = 0; i < 60000 && ReadCounter(first, reader) == 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  REQUIRE(ReadCounter(first, reader) > 0);  // the first grid runs

  EMU_OK(cancel(doomed));
  EMU_OK(emu.cuStreamSynchronize(doomed));  // no error: cancelling is not a fault
  EMU_OK(emu.cuEventSynchronize(after));    // what waits for the stream is released
  const unsigned ran = ReadCounter(first, reader);
  CHECK(ran < kBlocks);                      // blocks not started never ran
  CHECK(ReadCounter(second, reader) == 0);   // the queued launch never started
  EMU_OK(emu.cuLaunchKernel(count, 1, 1, 1, 32, 1, 1, 0, doomed, args, nullptr));
  EMU_OK(emu.cuStreamSynchronize(doomed));
  CHECK(ReadCounter(second, reader) == 0);  // later launches are skipped
  CHECK(ReadCounter(first, reader) == ran);

  // Other streams and the context carry on.
  const CUdeviceptr other = Zeros<unsigned>(1);
  target = other;
  EMU_OK(emu.cuLaunchKernel(count, 64, 1, 1, 32, 1, 1, 0, reader, args, nullptr));
  EMU_OK(emu.cuStreamSynchronize(reader));
  CHECK(ReadCounter(other, reader) == 64);
  EMU_OK(emu.cuCtxSynchronize());
  CHECK(cancel(reinterpret_cast<CUstream>(0x1234)) == CUDA_ERROR_INVALID_HANDLE);
  EMU_OK(emu.cuEventDestroy_v2(after));
  EMU_OK(emu.cuStreamDestroy_v2(doomed));
  EMU_OK(emu.cuStreamDestroy_v2(reader));
}

TEST_CASE("cancelling ends a kernel that would never end") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const auto cancel = Extension<PFN_tallyEmuStreamCancel>("tallyEmuStreamCancel");
  const CUfunction spin = KernelFrom("tenant", "spin_until");
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr flag = Zeros<int>(1);
  void* args[] = {&flag};
  EMU_OK(emu.cuLaunchKernel(spin, 256, 1, 1, 64, 1, 1, 0, stream, args, nullptr));
  std::this_thread::sleep_for(20ms);
  CHECK(emu.cuStreamQuery(stream) == CUDA_ERROR_NOT_READY);
  EMU_OK(cancel(stream));
  EMU_OK(emu.cuStreamSynchronize(stream));
  EMU_OK(emu.cuStreamDestroy_v2(stream));
}

}  // namespace
}  // namespace tally::emu::testing
