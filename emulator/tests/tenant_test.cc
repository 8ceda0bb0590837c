// The extensions a sharing server uses (cuda_abi/driver_extensions.h): cancelling a dead client's stream, and
// tenants (fault containment, memory isolation).
#include <dlfcn.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

// First: it defines what the CUDA headers need for the tests' versioned names.
#include "emulator/tests/kernel_util.h"
//
#include "cuda_abi/driver_extensions.h"

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

// Until some block of count_then_wait has counted itself (within a minute): its grid runs.
bool AwaitCounted(CUdeviceptr counter, CUstream reader) {
  for (int i = 0; i < 60000; ++i) {
    if (ReadCounter(counter, reader) > 0) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST_CASE("a cancelled stream stops its running grid, skips later launches, releases waiters") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const auto cancel = Extension<PFN_tallyEmuStreamCancel>("tallyEmuStreamCancel");
  const CUfunction count = KernelFrom("tenant", "count_then_wait");
  CUstream doomed = nullptr;
  CUstream reader = nullptr;
  EMU_OK(emu.cuStreamCreate(&doomed, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuStreamCreate(&reader, CU_STREAM_NON_BLOCKING));
  const CUdeviceptr first = Zeros<unsigned>(1);
  const CUdeviceptr second = Zeros<unsigned>(1);
  const CUdeviceptr never = Zeros<int>(1);
  constexpr unsigned kBlocks = 20000;
  CUdeviceptr target = first;
  CUdeviceptr flag = never;
  void* args[] = {&target, &flag};
  EMU_OK(emu.cuLaunchKernel(count, kBlocks, 1, 1, 32, 1, 1, 0, doomed, args, nullptr));
  target = second;  // the parameters are copied at the launch
  EMU_OK(emu.cuLaunchKernel(count, kBlocks, 1, 1, 32, 1, 1, 0, doomed, args, nullptr));
  CUevent after = nullptr;
  EMU_OK(emu.cuEventCreate(&after, CU_EVENT_DISABLE_TIMING));
  EMU_OK(emu.cuEventRecord(after, doomed));
  REQUIRE(AwaitCounted(first, reader));  // the first grid runs

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
  const CUdeviceptr released = Zeros<int>(1);
  EMU_OK(emu.cuMemsetD32_v2(released, 1, 1));
  target = other;
  flag = released;
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
  const CUfunction count = KernelFrom("tenant", "count_then_wait");
  CUstream stream = nullptr;
  CUstream reader = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuStreamCreate(&reader, CU_STREAM_NON_BLOCKING));
  CUdeviceptr counter = Zeros<unsigned>(1);
  CUdeviceptr never = Zeros<int>(1);
  void* args[] = {&counter, &never};
  EMU_OK(emu.cuLaunchKernel(count, 256, 1, 1, 64, 1, 1, 0, stream, args, nullptr));
  // Cancelled while its blocks run (they have counted themselves), not while it is queued.
  REQUIRE(AwaitCounted(counter, reader));
  CHECK(emu.cuStreamQuery(stream) == CUDA_ERROR_NOT_READY);
  EMU_OK(cancel(stream));
  EMU_OK(emu.cuStreamSynchronize(stream));
  EMU_OK(emu.cuStreamDestroy_v2(stream));
  EMU_OK(emu.cuStreamDestroy_v2(reader));
}

struct Tenants {
  PFN_tallyEmuStreamSetTenant stream = Extension<PFN_tallyEmuStreamSetTenant>(
      "tallyEmuStreamSetTenant");
  PFN_tallyEmuMemSetTenant memory = Extension<PFN_tallyEmuMemSetTenant>("tallyEmuMemSetTenant");
  PFN_tallyEmuTenantGetError error =
      Extension<PFN_tallyEmuTenantGetError>("tallyEmuTenantGetError");
};

// A non-blocking stream of `tenant`.
CUstream TenantStream(const Tenants& tenants, unsigned long long tenant) {
  CUstream stream = nullptr;
  EMU_OK(Emu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  EMU_OK(tenants.stream(stream, tenant));
  return stream;
}

// Launches copy_word(from, to) on `stream` and returns what synchronising the stream answers.
CUresult CopyWord(CUstream stream, CUdeviceptr from, CUdeviceptr to) {
  const CUfunction copy = KernelFrom("tenant", "copy_word");
  void* args[] = {&from, &to};
  const CUresult launched = Emu().cuLaunchKernel(copy, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr);
  if (launched != CUDA_SUCCESS) return launched;
  return Emu().cuStreamSynchronize(stream);
}

unsigned ReadWord(CUdeviceptr address) {
  unsigned value = 0;
  EMU_OK(Emu().cuMemcpyDtoH_v2(&value, address, sizeof(value)));
  return value;
}

TEST_CASE("a tenant's kernel touches only its own memory and memory of no tenant") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const Tenants tenants;
  CUstream a = TenantStream(tenants, 1);
  CUstream b = TenantStream(tenants, 2);
  const CUdeviceptr mine = Zeros<unsigned>(1);
  const CUdeviceptr theirs = Zeros<unsigned>(1);
  const CUdeviceptr nobodys = Zeros<unsigned>(1);
  EMU_OK(tenants.memory(mine, 1));
  EMU_OK(tenants.memory(theirs, 2));
  const unsigned secret = 42;
  EMU_OK(emu.cuMemcpyHtoD_v2(theirs, &secret, sizeof(secret)));
  EMU_OK(emu.cuMemcpyHtoD_v2(nobodys, &secret, sizeof(secret)));

  CHECK(CopyWord(a, nobodys, mine) == CUDA_SUCCESS);
  CHECK(ReadWord(mine) == secret);
  CHECK(CopyWord(b, theirs, nobodys) == CUDA_SUCCESS);  // tenant 2's own
  CHECK(CopyWord(a, theirs, mine) == CUDA_ERROR_ILLEGAL_ADDRESS);  // a load
  CHECK(tenants.error(1) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(tenants.error(2) == CUDA_SUCCESS);
  // A store into another tenant's memory fails the same way (in a fresh tenant: 1 is faulted).
  CUstream c = TenantStream(tenants, 3);
  CHECK(CopyWord(c, nobodys, theirs) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(ReadWord(theirs) == secret);
  CHECK(tenants.memory(mine + 4, 1) == CUDA_ERROR_INVALID_VALUE);  // not an allocation's start
  for (CUstream stream : {a, b, c}) EMU_OK(emu.cuStreamDestroy_v2(stream));
}

TEST_CASE("a fault in a tenant's kernel is that tenant's sticky error, not the context's") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const Tenants tenants;
  CUstream faulty = TenantStream(tenants, 11);
  CUstream sibling = TenantStream(tenants, 11);  // another stream of the same tenant
  CUstream other = TenantStream(tenants, 12);
  const CUdeviceptr word = Zeros<unsigned>(1);
  CHECK(CopyWord(faulty, 64, word) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(tenants.error(11) == CUDA_ERROR_ILLEGAL_ADDRESS);
  // Sticky for every stream of the tenant, for every kind of work.
  CHECK(emu.cuStreamQuery(sibling) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(emu.cuStreamSynchronize(faulty) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(emu.cuMemsetD8Async(word, 1, 4, sibling) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(CopyWord(sibling, word, word) == CUDA_ERROR_ILLEGAL_ADDRESS);
  // Other tenants, work of no tenant and the context carry on.
  const CUdeviceptr source = Zeros<unsigned>(1);
  const unsigned seven = 7;
  EMU_OK(emu.cuMemcpyHtoD_v2(source, &seven, sizeof(seven)));
  CHECK(CopyWord(other, source, word) == CUDA_SUCCESS);
  CHECK(ReadWord(word) == seven);
  CHECK(tenants.error(12) == CUDA_SUCCESS);
  CHECK(CopyWord(nullptr, source, word) == CUDA_SUCCESS);
  EMU_OK(emu.cuCtxSynchronize());
  CHECK(tenants.error(0) == CUDA_SUCCESS);  // 0 is no tenant
  for (CUstream stream : {faulty, sibling, other}) EMU_OK(emu.cuStreamDestroy_v2(stream));
  CHECK(tenants.stream(reinterpret_cast<CUstream>(0x1234), 1) == CUDA_ERROR_INVALID_HANDLE);
}

// Everything pending for `tenant`, taken in pieces of at most `piece` bytes, stdout only.
std::string TakeAll(PFN_tallyEmuTenantTakeOutput take, unsigned long long tenant, size_t piece) {
  std::string text;
  std::vector<char> buffer(piece);
  for (;;) {
    int stream = 0;
    size_t size = 0;
    EMU_OK(take(tenant, &stream, buffer.data(), buffer.size(), &size));
    if (size == 0) return text;
    CHECK(stream == 1);
    text.append(buffer.data(), size);
  }
}

TEST_CASE("a tenant's printf is kept for it, in order, until taken") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const Tenants tenants;
  const auto take = Extension<PFN_tallyEmuTenantTakeOutput>("tallyEmuTenantTakeOutput");
  CUstream mine = TenantStream(tenants, 21);
  CUstream other = TenantStream(tenants, 22);
  const CUfunction say = KernelFrom("tenant", "say");
  int value = 5;
  void* args[] = {&value};
  EMU_OK(emu.cuLaunchKernel(say, 1, 1, 1, 2, 1, 1, 0, mine, args, nullptr));
  EMU_OK(emu.cuStreamSynchronize(mine));
  value = 6;
  EMU_OK(emu.cuLaunchKernel(say, 1, 1, 1, 1, 1, 1, 0, mine, args, nullptr));
  EMU_OK(emu.cuStreamSynchronize(mine));
  CHECK(TakeAll(take, 22, 64).empty());  // nothing of another tenant's
  // Lanes print in lane order; the pieces (7 bytes here) come back whole and in order.
  CHECK(TakeAll(take, 21, 7) == "thread 0 says 5\nthread 1 says 5\nthread 0 says 6\n");
  CHECK(TakeAll(take, 21, 64).empty());  // taken once
  int stream = 0;
  size_t size = 1;
  CHECK(take(21, nullptr, nullptr, 0, &size) == CUDA_ERROR_INVALID_VALUE);
  CHECK(take(21, &stream, nullptr, 8, &size) == CUDA_ERROR_INVALID_VALUE);
  for (CUstream stream : {mine, other}) EMU_OK(emu.cuStreamDestroy_v2(stream));
}

}  // namespace
}  // namespace tally::emu::testing
