// Device output rings (device_output_ring.h). The reader on records laid out by hand: every
// complete record in order, across the ring's end, stopping at one not yet committed, its space
// zeroed and handed back, and a malformed one ending the reading. Then kernels on the emulated GPU
// (its tenants off, as NVIDIA's driver has none) whose printf the module registry redirected:
// every kind of argument formatted as the host's printf does, records wrapping around a small
// ring, and a full ring dropping text (printf returns -1) until the server reads it. Fenced, the
// same kernels print what they printed, but nothing of memory outside the client's ranges.
#include "server/device_output_ring.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_abi/device_output_ring.h"
#include "ptx_transform/transform.h"
#include "server/module_registry.h"

namespace tally::server {
namespace {

struct Line {
  uint32_t stream;
  std::string text;
  friend bool operator==(const Line&, const Line&) = default;
};

// Ring memory of `capacity` bytes, with a writer that lays records out as the device does.
struct HostRing {
  explicit HostRing(uint64_t capacity)
      : capacity(capacity), words((kRingDataOffset + capacity) / 8) {}
  std::byte* memory() { return reinterpret_cast<std::byte*>(words.data()); }
  std::byte* data() { return memory() + kRingDataOffset; }
  uint64_t tail() const { return words[0]; }

  void PutBytes(uint64_t& position, const void* bytes, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      data()[(position + i) % capacity] = static_cast<const std::byte*>(bytes)[i];
    }
    position += size;
  }
  void PutString(uint64_t& position, const std::string& text) {
    PutBytes(position, text.c_str(), text.size() + 1);
    position = (position + 7) / 8 * 8;
  }
  // A record of `format` and its 8-byte arguments at `head`; committed unless told otherwise.
  // Returns where the next one starts.
  uint64_t Put(uint64_t head, uint32_t stream, const std::string& format,
               const std::vector<uint64_t>& arguments, bool committed = true) {
    uint64_t position = head + 8;
    PutString(position, format);
    for (const uint64_t word : arguments) PutBytes(position, &word, 8);
    const uint64_t header =
        committed ? RecordHeader(stream, static_cast<uint32_t>(position - head)) : 0;
    uint64_t at = head;
    PutBytes(at, &header, 8);
    return position;
  }

  uint64_t capacity;
  std::vector<uint64_t> words;
};

// What a DeviceOutputRingReader or a DeviceOutputRing prints now.
template <typename Ring>
std::vector<Line> Drain(Ring& ring) {
  std::vector<Line> lines;
  ring.Drain([&](uint32_t stream, std::string_view text) {
    lines.push_back({stream, std::string(text)});
  });
  return lines;
}

TEST_CASE("The reader prints complete records in order and hands their space back") {
  HostRing fresh(128);
  DeviceOutputRingReader good(fresh.memory(), fresh.capacity);
  uint64_t head =
      fresh.Put(0, 1, "value %d, wide %lld\n", {uint64_t(-5) & 0xffffffff, uint64_t(-6)});
  // A %s without its string: this record's text is dropped, the next one is read.
  head = fresh.Put(head, 1, "a %d and %s\n", {7});
  head = fresh.Put(head, 2, "stderr %c\n", {'x'});
  CHECK(Drain(good) == std::vector<Line>{{1, "value -5, wide -6\n"}, {2, "stderr x\n"}});
  CHECK_FALSE(good.broken());
  CHECK(fresh.tail() == head);
  // What was read is zero again, for the writers.
  for (uint64_t i = 0; i < head; ++i) CHECK(fresh.data()[i] == std::byte{0});
  // A record not committed yet waits; this one runs over the ring's end and comes back whole.
  const uint64_t pending = fresh.Put(head, 1, "across the end %u\n", {77}, /*committed=*/false);
  REQUIRE(pending > fresh.capacity);
  CHECK(Drain(good).empty());
  fresh.Put(head, 1, "across the end %u\n", {77});
  CHECK(Drain(good) == std::vector<Line>{{1, "across the end 77\n"}});
  CHECK(fresh.tail() == pending);
  for (uint64_t i = 0; i < fresh.capacity; ++i) CHECK(fresh.data()[i] == std::byte{0});
}

TEST_CASE("A malformed header stops the reading for good") {
  HostRing ring(128);
  DeviceOutputRingReader reader(ring.memory(), ring.capacity);
  const uint64_t next = ring.Put(0, 1, "first\n", {});
  uint64_t garbage = 0x1234;  // no magic
  uint64_t at = next;
  ring.PutBytes(at, &garbage, 8);
  CHECK(Drain(reader) == std::vector<Line>{{1, "first\n"}});
  CHECK(reader.broken());
  // A record too large for the ring, a size not a multiple of 8, a stream that is none.
  for (const uint64_t header : {RecordHeader(1, 256), RecordHeader(1, 12), RecordHeader(3, 16)}) {
    HostRing bad(128);
    DeviceOutputRingReader bad_reader(bad.memory(), bad.capacity);
    uint64_t zero = 0;
    bad.PutBytes(zero, &header, 8);
    CHECK(Drain(bad_reader).empty());
    CHECK(bad_reader.broken());
  }
}

// The emulated GPU without tenants, as the server uses it when faults are shared.
struct SharedDevice {
  SharedDevice()
      : backend(*Backend::Load({.emulate = true,
                                .device = 0,
                                .emulator_library = TALLY_TEST_EMULATOR_LIBRARY,
                                .emulator_tenants = false})),
        modules(backend, /*build_forms=*/false),
        fenced_modules(backend, /*build_forms=*/false, /*fence=*/true) {
    backend.MakeCurrent().IgnoreError();
  }
  const DriverApi& api() const { return backend.api(); }
  Backend backend;
  ModuleRegistry modules;
  ModuleRegistry fenced_modules;  // --isolation fenced's
};

SharedDevice& TheDevice() {
  static SharedDevice* device = new SharedDevice;
  return *device;
}

std::shared_ptr<SharedModule> LoadPrintfModule(ModuleRegistry& registry = TheDevice().modules) {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/printf_kernel.fatbin",
                     std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  auto module = registry.Register({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  REQUIRE(module.ok());
  REQUIRE((*module)->parsed().redirects_device_output);
  return *module;
}

// A ring of `capacity` bytes the module's kernels write into.
std::unique_ptr<DeviceOutputRing> BoundRing(const SharedModule& module, uint64_t capacity) {
  auto ring = DeviceOutputRing::Create(TheDevice().api(), capacity);
  REQUIRE(ring.ok());
  auto variable = module.FindGlobal(kDeviceOutputVariable);
  REQUIRE(variable.ok());
  REQUIRE((*ring)->Bind(variable->first, variable->second).ok());
  return *std::move(ring);
}

// Runs `kernel` with `threads` threads and `returned`, the device array of their printf results,
// first among its parameters; returns the results.
template <typename... Args>
std::vector<int> LaunchWith(const SharedModule& module, const char* kernel, CUdeviceptr returned,
                            unsigned threads, Args... args) {
  const DriverApi& api = TheDevice().api();
  auto found = module.FindKernel(kernel);
  REQUIRE(found.ok());
  void* params[] = {&returned, &args...};
  CUstream stream = nullptr;
  REQUIRE(api.cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0) == CUDA_SUCCESS);
  REQUIRE(api.cuLaunchKernel((*found)->function, 1, 1, 1, threads, 1, 1, 0, stream, params,
                             nullptr) == CUDA_SUCCESS);
  std::vector<int> results(threads);
  REQUIRE(api.cuMemcpyDtoHAsync(results.data(), returned, threads * sizeof(int), stream) ==
          CUDA_SUCCESS);
  REQUIRE(api.cuStreamSynchronize(stream) == CUDA_SUCCESS);
  api.cuStreamDestroy(stream);
  return results;
}

// LaunchWith an array of its own.
template <typename... Args>
std::vector<int> Launch(const SharedModule& module, const char* kernel, unsigned threads,
                        Args... args) {
  const DriverApi& api = TheDevice().api();
  CUdeviceptr returned = 0;
  REQUIRE(api.cuMemAlloc(&returned, threads * sizeof(int)) == CUDA_SUCCESS);
  std::vector<int> results = LaunchWith(module, kernel, returned, threads, args...);
  api.cuMemFree(returned);
  return results;
}

// PrintEverything's line for thread `t`, whose second %s is `string`.
Line EverythingLine(unsigned t, int i, unsigned u, long long l, double d, const char* string) {
  char text[512];
  std::snprintf(text, sizeof(text),
                "t%u: %d %u %x %lld %llu %c %5.2f %e %s %s %% [%*d] [%-*d] %hd %zu %.*f\n", t, i, u,
                u, l, static_cast<unsigned long long>(l), 'A' + t, d, d, "word", string, 6, i, 4, i,
                static_cast<short>(i), sizeof(double), 3, d);
  return {1, text};
}

TEST_CASE("Redirected printf formats every kind of argument as the host's printf") {
  const std::shared_ptr<SharedModule> module = LoadPrintfModule();
  const std::unique_ptr<DeviceOutputRing> ring = BoundRing(*module, DeviceOutputRing::kCapacity);
  const int i = -42;
  const unsigned u = 3000000000u;
  const long long l = -1234567890123LL;
  const double d = 3.14159;
  const uint64_t null_string = 0;
  const std::vector<int> returned = Launch(*module, "PrintEverything", 2, i, u, l, d, null_string);
  CHECK(returned == std::vector<int>{19, 19});  // the arguments each call took
  std::vector<Line> lines = Drain(*ring);
  std::ranges::sort(lines, {}, &Line::text);
  CHECK(lines == std::vector<Line>{EverythingLine(0, i, u, l, d, "(null)"),
                                   EverythingLine(1, i, u, l, d, "(null)")});
}

TEST_CASE("Records wrap around a small ring; a full ring drops text until it is read") {
  const std::shared_ptr<SharedModule> module = LoadPrintfModule();
  // Each record: header 8, format 40, two arguments 16 = 64 bytes; four fit in 256.
  const std::unique_ptr<DeviceOutputRing> ring = BoundRing(*module, 256);
  for (int round = 0; round < 7; ++round) {
    INFO("round " << round);
    CHECK(Launch(*module, "PrintLine", 3, round) == std::vector<int>(3, 2));
    std::vector<Line> lines = Drain(*ring);
    std::ranges::sort(lines, {}, &Line::text);
    std::vector<Line> want;
    for (int t = 0; t < 3; ++t) {
      want.push_back({1, "round " + std::to_string(round) + " thread " + std::to_string(t) +
                             " of the ring test\n"});
    }
    CHECK(lines == want);
  }
  // Six threads, room for four: two printf calls return -1 and their text is not there.
  const std::vector<int> returned = Launch(*module, "PrintLine", 6, 100);
  CHECK(std::ranges::count(returned, 2) == 4);
  CHECK(std::ranges::count(returned, -1) == 2);
  CHECK(Drain(*ring).size() == 4);
  CHECK(Launch(*module, "PrintLine", 4, 101) == std::vector<int>(4, 2));
  CHECK(Drain(*ring).size() == 4);
}

// Device memory of `bytes` bytes holding `text` at `offset` (its NUL only if `text` has one).
CUdeviceptr DeviceText(size_t bytes, size_t offset, std::string_view text) {
  const DriverApi& api = TheDevice().api();
  CUdeviceptr memory = 0;
  REQUIRE(api.cuMemAlloc(&memory, bytes) == CUDA_SUCCESS);
  REQUIRE(api.cuMemsetD8Async(memory, 0, bytes, nullptr) == CUDA_SUCCESS);
  if (!text.empty()) {
    REQUIRE(api.cuMemcpyHtoDAsync(memory + offset, text.data(), text.size(), nullptr) ==
            CUDA_SUCCESS);
  }
  REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  return memory;
}

// The fence's violation flag at `flag`, cleared for the next launch.
uint32_t TakeFlag(CUdeviceptr flag) {
  const DriverApi& api = TheDevice().api();
  uint32_t value = 0;
  REQUIRE(api.cuMemcpyDtoHAsync(&value, flag, sizeof(value), nullptr) == CUDA_SUCCESS);
  REQUIRE(api.cuMemsetD32Async(flag, 0, 1, nullptr) == CUDA_SUCCESS);
  REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  return value;
}

TEST_CASE("Fenced printf prints the client's own strings, and nothing of anyone else's") {
  const std::shared_ptr<SharedModule> fenced = LoadPrintfModule(TheDevice().fenced_modules);
  REQUIRE(fenced->kernels().at("PrintEverything").fenced);
  const std::shared_ptr<SharedModule> plain = LoadPrintfModule();
  const std::unique_ptr<DeviceOutputRing> fenced_ring =
      BoundRing(*fenced, DeviceOutputRing::kCapacity);
  const std::unique_ptr<DeviceOutputRing> plain_ring =
      BoundRing(*plain, DeviceOutputRing::kCapacity);
  // The client's range: 256 bytes (the printf results first), whose last 8 hold text that goes
  // on, without its NUL, into the next 256, which are not the client's.
  const CUdeviceptr own = DeviceText(512, 248, "[mine]->theirs\n");
  const CUdeviceptr foreign = DeviceText(256, 0, std::string_view("another's secret", 17));
  const CUdeviceptr flag = DeviceText(sizeof(uint32_t), 0, "");
  ptx::FenceParams fence = {};
  fence.base[0] = own;
  fence.size[0] = 256;
  fence.base[2] = fenced->variable_range().base;
  fence.size[2] = fenced->variable_range().size;
  fence.violation_flag = flag;
  const int i = 7;
  const unsigned u = 8;
  const long long l = 9;
  const double d = 0.5;

  // Its own strings (the format and "word" are the module's variables) print as they did.
  CHECK(LaunchWith(*fenced, "PrintEverything", own, 2, i, u, l, d, uint64_t{0}, fence) ==
        std::vector<int>{19, 19});
  std::vector<Line> lines = Drain(*fenced_ring);
  std::ranges::sort(lines, {}, &Line::text);
  CHECK(lines == std::vector<Line>{EverythingLine(0, i, u, l, d, "(null)"),
                                   EverythingLine(1, i, u, l, d, "(null)")});
  CHECK(TakeFlag(flag) == 0);

  // A %s of another's memory prints as an empty string, and the violation is raised; unfenced,
  // the secret is printed (what the fence prevents).
  LaunchWith(*fenced, "PrintEverything", own, 1, i, u, l, d, foreign, fence);
  CHECK(Drain(*fenced_ring) == std::vector<Line>{EverythingLine(0, i, u, l, d, "")});
  CHECK(TakeFlag(flag) == 1);
  Launch(*plain, "PrintEverything", 1, i, u, l, d, foreign);
  CHECK(Drain(*plain_ring) == std::vector<Line>{EverythingLine(0, i, u, l, d, "another's secret")});

  // A format that runs out of the client's range ends where the range does.
  CHECK(LaunchWith(*fenced, "PrintFormat", own, 1, own + 248, fence) == std::vector<int>{0});
  CHECK(Drain(*fenced_ring) == std::vector<Line>{{1, "[mine]->"}});
  CHECK(TakeFlag(flag) == 1);
  Launch(*plain, "PrintFormat", 1, own + 248);
  CHECK(Drain(*plain_ring) == std::vector<Line>{{1, "[mine]->theirs\n"}});
  for (const CUdeviceptr memory : {own, foreign, flag}) TheDevice().api().cuMemFree(memory);
}

}  // namespace
}  // namespace tally::server
