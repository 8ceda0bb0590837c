// A hostile or broken client against a real session on the emulated GPU: truncated and
// mistyped messages end the session (HandleCall fails), while forged handles, foreign handles,
// out-of-range pointers and bulk refs are answered with CUDA errors and never reach the device.
#include "server/session.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ipc/content_hash.h"
#include "ipc/cuda_calls.h"
#include "ipc/library_calls.h"
#include "scheduler/policy.h"
#include "server/call_dispatch.h"
#include "server/server.h"

namespace tally::server {
namespace {

ipc::GetDeviceInfoResponse CurrentDeviceInfo(const Backend& backend) {
  backend.MakeCurrent().IgnoreError();  // for this (the test's main) thread
  return *QueryDeviceInfo(backend);
}

// One emulated device shared by all tests of this binary, as in the server.
struct Device {
  Device()
      : backend(*Backend::Load(
            {.emulate = true, .device = 0, .emulator_library = TALLY_TEST_EMULATOR_LIBRARY})),
        info(CurrentDeviceInfo(backend)),
        modules(backend, /*build_forms=*/false),
        dispatcher(*Dispatcher::Create(backend, scheduler::MakeFifoPolicy(), nullptr,
                                       std::chrono::milliseconds(1),
                                       [this] { backend.MakeCurrent().IgnoreError(); })),
        context{backend, modules, *dispatcher, info} {}
  Backend backend;
  ipc::GetDeviceInfoResponse info;
  ModuleRegistry modules;
  std::unique_ptr<Dispatcher> dispatcher;
  ServerContext context;
};

Device& TheDevice() {
  static Device* device = new Device;
  return *device;
}

class TestClient {
 public:
  // `host_region`: page-aligned memory standing in for the client's host region.
  explicit TestClient(uint64_t id = 1, std::span<std::byte> host_region = {},
                      ServerContext& context = TheDevice().context)
      : bulk_(1 << 16) {
    ipc::ClientInfo info;
    info.client_id = ClientId(id);
    session_ = *Session::Create(context, info, ipc::BulkArea(bulk_), host_region);
  }

  template <typename Request>
  std::vector<std::byte> Record(const Request& request, std::span<const std::byte> tail = {}) {
    const ipc::MessageHeader header{Request::kType, 0, ++sequence_,
                                    static_cast<uint32_t>(sizeof(Request) + tail.size()), 0};
    std::vector<std::byte> record(sizeof(header) + sizeof(Request));
    std::memcpy(record.data(), &header, sizeof(header));
    std::memcpy(record.data() + sizeof(header), &request, sizeof(Request));
    record.insert(record.end(), tail.begin(), tail.end());
    return record;
  }

  // The CUresult a sync request is answered with (CUDA_SUCCESS for a normal response).
  template <typename Request>
  CUresult Result(const Request& request, std::span<const std::byte> tail = {}) {
    auto outcome = HandleCall(*session_, Record(request, tail));
    REQUIRE(outcome.ok());
    // A response made later (kWait) is made here, on the test's thread.
    if (auto* later = std::get_if<LaterResponse>(&*outcome)) {
      last_response_ = (*later)();
    } else {
      REQUIRE(std::holds_alternative<std::vector<std::byte>>(*outcome));
      last_response_ = std::get<std::vector<std::byte>>(*outcome);
    }
    const auto message = ipc::ParseMessage(last_response_);
    REQUIRE(message.ok());
    if (message->header.type != ipc::CallError::kType) return CUDA_SUCCESS;
    CHECK((message->header.flags & ipc::kFlagError) != 0);
    const auto error = ipc::Decode<ipc::CallError>(*message);
    REQUIRE(error.ok());
    last_reason_.assign(reinterpret_cast<const char*>(error->tail.data()), error->tail.size());
    return static_cast<CUresult>(error->fields.result);
  }

  template <typename Response>
  Response Last() {
    return ipc::Decode<Response>(*ipc::ParseMessage(last_response_))->fields;
  }

  template <typename Request>
  void Post(const Request& request, std::span<const std::byte> tail = {}) {
    auto outcome = HandleCall(*session_, Record(request, tail));
    REQUIRE(outcome.ok());
    CHECK(std::holds_alternative<std::monostate>(*outcome));
  }

  uint64_t Malloc(uint64_t size) {
    REQUIRE(Result(ipc::MemAllocRequest{.size = size}) == CUDA_SUCCESS);
    return Last<ipc::MemAllocResponse>().device_ptr;
  }

  // The explanation that came with the last CallError.
  const std::string& last_reason() const { return last_reason_; }
  Session& session() { return *session_; }
  std::span<std::byte> bulk() { return bulk_; }
  void End() { session_.reset(); }

 private:
  std::vector<std::byte> bulk_;
  std::unique_ptr<Session> session_;
  uint64_t sequence_ = 0;
  std::vector<std::byte> last_response_;
  std::string last_reason_;
};

TEST_CASE("malformed records end the session") {
  TestClient client;
  std::vector<std::byte> record = client.Record(ipc::MemAllocRequest{.size = 16});
  SECTION("shorter than a header") {
    CHECK_FALSE(HandleCall(client.session(), std::span(record).first(10)).ok());
  }
  SECTION("payload size disagreeing with the record") {
    CHECK_FALSE(HandleCall(client.session(), std::span(record).first(record.size() - 1)).ok());
  }
  SECTION("payload too short for the type") {
    auto header = reinterpret_cast<ipc::MessageHeader*>(record.data());
    header->payload_size -= 4;
    record.resize(record.size() - 4);
    CHECK_FALSE(HandleCall(client.session(), record).ok());
  }
  SECTION("unknown type") {
    reinterpret_cast<ipc::MessageHeader*>(record.data())->type = 0x7777;
    CHECK_FALSE(HandleCall(client.session(), record).ok());
  }
  SECTION("a response type sent as a request") {
    reinterpret_cast<ipc::MessageHeader*>(record.data())->type = ipc::MemAllocResponse::kType;
    CHECK_FALSE(HandleCall(client.session(), record).ok());
  }
}

TEST_CASE("forged and foreign handles are INVALID_HANDLE") {
  TestClient a(1);
  TestClient b(2);
  REQUIRE(a.Result(ipc::StreamCreateRequest{}) == CUDA_SUCCESS);
  const uint64_t stream = a.Last<ipc::StreamCreateResponse>().stream;
  REQUIRE(a.Result(ipc::EventCreateRequest{}) == CUDA_SUCCESS);
  const uint64_t event = a.Last<ipc::EventCreateResponse>().event;
  CHECK(a.Result(ipc::StreamSynchronizeRequest{.stream = stream}) == CUDA_SUCCESS);
  CHECK(b.Result(ipc::StreamSynchronizeRequest{.stream = stream}) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(b.Result(ipc::EventSynchronizeRequest{.event = event}) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(a.Result(ipc::StreamSynchronizeRequest{.stream = stream + 1}) == CUDA_ERROR_INVALID_HANDLE);
  // A handle of one kind is not a handle of another.
  CHECK(a.Result(ipc::EventSynchronizeRequest{.event = stream}) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(a.Result(ipc::GetFunctionRequest{.module = 12345}) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(a.Result(ipc::StreamDestroyRequest{.stream = stream}) == CUDA_SUCCESS);
  CHECK(a.Result(ipc::StreamDestroyRequest{.stream = stream}) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("pointer ranges outside the client's own allocations are refused") {
  TestClient a(1);
  TestClient b(2);
  const uint64_t mine = a.Malloc(256);
  const uint64_t theirs = b.Malloc(256);
  const ipc::BulkRef block{0, 256};
  CHECK(a.Result(ipc::MemcpyHtoDRequest{.dst = mine, .stream = 0, .src = block}) == CUDA_SUCCESS);
  CHECK(a.Result(ipc::MemcpyHtoDRequest{.dst = mine + 1, .stream = 0, .src = block}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemcpyHtoDRequest{.dst = theirs, .stream = 0, .src = block}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemcpyDtoHRequest{.src = theirs, .stream = 0, .dst = block}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemFreeRequest{.device_ptr = theirs}) == CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemFreeRequest{.device_ptr = mine + 16}) == CUDA_ERROR_INVALID_VALUE);
  // Bulk refs outside the area, including ones whose end wraps around 2^64.
  CHECK(a.Result(ipc::MemcpyDtoHRequest{.src = mine, .stream = 0, .dst = {1 << 16, 1}}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemcpyDtoHRequest{.src = mine, .stream = 0, .dst = {~0ull - 7, 16}}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(a.Result(ipc::MemFreeRequest{.device_ptr = mine}) == CUDA_SUCCESS);
  CHECK(a.Result(ipc::MemcpyHtoDRequest{.dst = mine, .stream = 0, .src = block}) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("copies round-trip through the bulk area") {
  TestClient client;
  const uint64_t pointer = client.Malloc(64);
  for (int i = 0; i < 64; ++i) client.bulk()[i] = std::byte(i);
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{.dst = pointer, .stream = 0, .src = {0, 64}}) ==
          CUDA_SUCCESS);
  client.Post(ipc::MemsetRequest{
      .value = 0x1ff, .element_size = 1, .dst = pointer + 8, .size = 8, .stream = 0});
  REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = pointer, .stream = 0, .dst = {64, 64}}) ==
          CUDA_SUCCESS);
  CHECK(client.bulk()[64 + 7] == std::byte(7));
  CHECK(client.bulk()[64 + 8] == std::byte(0xff));  // the low byte of the value only
  CHECK(client.bulk()[64 + 16] == std::byte(16));
}

// Page-aligned memory standing in for a client's host region (the same address in both
// processes is the segment's business, tested in ipc/).
struct HostRegion {
  HostRegion() : bytes(static_cast<std::byte*>(std::aligned_alloc(kPage, kSize)), std::free) {}
  static constexpr size_t kPage = 4096, kSize = 16 * kPage;
  std::unique_ptr<std::byte, decltype(&std::free)> bytes;
  std::span<std::byte> span() { return {bytes.get(), kSize}; }
  uint64_t at(size_t offset) { return reinterpret_cast<uint64_t>(bytes.get()) + offset; }
};

ipc::CopySide Side(ipc::MemorySpace space, uint64_t address, uint64_t pitch, uint64_t rows = 1) {
  return {static_cast<uint32_t>(space), 0, address, pitch, rows};
}

TEST_CASE("host blocks must be whole pages of the client's host region, registered once") {
  HostRegion region;
  TestClient client(1, region.span());
  const auto alloc = [&](uint64_t address, uint64_t size) {
    return client.Result(ipc::HostAllocRequest{.address = address, .size = size});
  };
  CHECK(alloc(region.at(0) - 4096, 4096) == CUDA_ERROR_INVALID_VALUE);       // before the region
  CHECK(alloc(region.at(15 * 4096), 2 * 4096) == CUDA_ERROR_INVALID_VALUE);  // past its end
  CHECK(alloc(region.at(8), 4096) == CUDA_ERROR_INVALID_VALUE);              // unaligned
  CHECK(alloc(region.at(0), 100) == CUDA_ERROR_INVALID_VALUE);               // part of a page
  CHECK(alloc(region.at(0), 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(alloc(UINT64_MAX - 4095, 8192) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(alloc(region.at(4096), 2 * 4096) == CUDA_SUCCESS);
  CHECK(alloc(region.at(0), 2 * 4096) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK(alloc(region.at(2 * 4096), 4096) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CHECK(client.Result(ipc::HostFreeRequest{.address = region.at(2 * 4096)}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(client.Result(ipc::HostFreeRequest{.address = region.at(4096)}) == CUDA_SUCCESS);
  CHECK(client.Result(ipc::HostFreeRequest{.address = region.at(4096)}) ==
        CUDA_ERROR_INVALID_VALUE);
  // A session that ends unregisters its blocks: the next one can register them again.
  REQUIRE(alloc(region.at(0), 4096) == CUDA_SUCCESS);
  client.End();
  TestClient next(2, region.span());
  CHECK(next.Result(ipc::HostAllocRequest{.address = region.at(0), .size = 4096}) == CUDA_SUCCESS);
}

TEST_CASE("device and page-locked memory beyond a client's limits is refused") {
  ServerContext limited = TheDevice().context;
  limited.limits.memory_limit = 1 << 20;
  limited.limits.pinned_limit = 2 * 4096;
  HostRegion region;
  TestClient client(1, region.span(), limited);
  CHECK(client.session().memory_limit() == 1 << 20);
  client.Malloc(768 << 10);
  CHECK(client.Result(ipc::MemAllocRequest{.size = (256 << 10) + 1}) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("limit of 1048576 bytes") != std::string::npos);
  const uint64_t last = client.Malloc(256 << 10);  // exactly up to the limit
  REQUIRE(client.Result(ipc::MemGetInfoRequest{}) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::MemGetInfoResponse>().total_bytes == 1 << 20);
  CHECK(client.Last<ipc::MemGetInfoResponse>().free_bytes == 0);
  REQUIRE(client.Result(ipc::GetDeviceInfoRequest{}) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::GetDeviceInfoResponse>().total_memory == 1 << 20);
  REQUIRE(client.Result(ipc::MemFreeRequest{.device_ptr = last}) == CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::MemGetInfoRequest{}) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::MemGetInfoResponse>().free_bytes == 256 << 10);
  // A raised limit (tally-ctl limit) is effective at the next allocation.
  client.session().set_memory_limit(2 << 20);
  client.Malloc(1 << 20);
  CHECK(client.session().Status().memory_bytes == (768 << 10) + (1 << 20));
  CHECK(client.session().Status().memory_limit == 2 << 20);

  const auto pin = [&](uint64_t offset, uint64_t size) {
    return client.Result(ipc::HostAllocRequest{.address = region.at(offset), .size = size});
  };
  CHECK(pin(0, 3 * 4096) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(pin(0, 4096) == CUDA_SUCCESS);
  CHECK(pin(4096, 4096) == CUDA_SUCCESS);
  CHECK(pin(2 * 4096, 4096) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("--client-pinned-limit") != std::string::npos);
  CHECK(client.session().Status().pinned_bytes == 2 * 4096);
}

TEST_CASE("Under --unfenceable alone no memory while another's unfenced kernel runs, none after") {
  UnfencedGate gate(std::chrono::milliseconds(20));
  ServerContext alone = TheDevice().context;
  alone.unfenced_gate = &gate;
  HostRegion region;
  TestClient client(1, region.span(), alone);
  const ClientId other(2);
  REQUIRE(gate.TryAdmit(other));
  CHECK(client.Result(ipc::MemAllocRequest{.size = 4096}) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("runs alone on the device (tally-server --unfenceable alone), "
                                  "which it did for longer than 20 ms") != std::string::npos);
  CHECK(client.Result(ipc::HostAllocRequest{.address = region.at(0), .size = 4096}) ==
        CUDA_ERROR_OUT_OF_MEMORY);
  gate.End(other);
  client.Malloc(4096);
  CHECK_FALSE(gate.TryAdmit(other));  // the client holds memory
  client.End();
  CHECK(gate.TryAdmit(other));  // it left, its memory freed
  gate.End(other);
}

TEST_CASE("a client's own memory-limit wish only lowers the server's limit") {
  ServerContext limited = TheDevice().context;
  limited.limits.memory_limit = 4 << 20;
  std::vector<std::byte> bulk(4096);
  ipc::ClientInfo info;
  info.client_id = ClientId(3);
  info.memory_limit = 1 << 20;
  CHECK((*Session::Create(limited, info, ipc::BulkArea(bulk)))->memory_limit() == 1 << 20);
  info.memory_limit = 64 << 20;
  CHECK((*Session::Create(limited, info, ipc::BulkArea(bulk)))->memory_limit() == 4 << 20);
  info.memory_limit = 0;  // no wish
  CHECK((*Session::Create(limited, info, ipc::BulkArea(bulk)))->memory_limit() == 4 << 20);
}

TEST_CASE("box copies use host blocks in place and refuse ranges the client does not own") {
  HostRegion region;
  TestClient client(1, region.span());
  REQUIRE(client.Result(ipc::HostAllocRequest{.address = region.at(0), .size = 4096}) ==
          CUDA_SUCCESS);
  const uint64_t device = client.Malloc(256);
  auto* host = region.bytes.get();
  for (int i = 0; i < 64; ++i) host[i] = std::byte(i + 1);
  using ipc::MemorySpace;
  // 4 rows of 16 bytes from the host block (pitch 16) into the device (pitch 64), and back into
  // the block at offset 1024 (pitch 16) through the bulk area's absence: all one-way.
  const ipc::CopyExtent box{16, 4, 1};
  client.Post(
      ipc::Memcpy3DRequest{.copy = {.dst = Side(MemorySpace::kDevice, device, 64, 4),
                                    .src = Side(MemorySpace::kHostRegion, region.at(0), 16, 4),
                                    .extent = box,
                                    .stream = 0}});
  client.Post(ipc::Memset3DRequest{.value = 0xee,
                                   .element_size = 1,
                                   .dst = Side(MemorySpace::kDevice, device + 64 + 4, 64, 4),
                                   .extent = {2, 2, 1},
                                   .stream = 0});
  client.Post(
      ipc::Memcpy3DRequest{.copy = {.dst = Side(MemorySpace::kHostRegion, region.at(1024), 16, 4),
                                    .src = Side(MemorySpace::kDevice, device, 64, 4),
                                    .extent = box,
                                    .stream = 0}});
  REQUIRE(client.Result(ipc::StreamSynchronizeRequest{.stream = 0}) == CUDA_SUCCESS);
  for (int i = 0; i < 64; ++i) {
    const bool set = (i / 16 == 1 || i / 16 == 2) && (i % 16 == 4 || i % 16 == 5);
    CHECK(host[1024 + i] == (set ? std::byte(0xee) : std::byte(i + 1)));
  }

  const auto refused = [&](ipc::BoxCopy copy) {
    client.Post(ipc::Memcpy3DRequest{.copy = copy});
    return client.Result(ipc::StreamSynchronizeRequest{.stream = 0});
  };
  const ipc::CopySide in_block = Side(MemorySpace::kHostRegion, region.at(0), 16, 4);
  const ipc::CopySide on_device = Side(MemorySpace::kDevice, device, 64, 4);
  // Past the host block (registered: 1 page), in a page that is not a block, past the device
  // allocation, pitch below width, extents that would overflow, the bulk area one-way, an
  // unknown space.
  CHECK(refused({on_device, Side(MemorySpace::kHostRegion, region.at(4096 - 16), 16, 4), box, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({on_device, Side(MemorySpace::kHostRegion, region.at(8192), 16, 4), box, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({Side(MemorySpace::kDevice, device, 64, 4), in_block, {16, 4, 2}, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({on_device, Side(MemorySpace::kHostRegion, region.at(0), 8, 4), box, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({on_device, in_block, {16, UINT64_MAX, UINT64_MAX}, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({on_device, Side(MemorySpace::kBulk, 0, 16, 4), box, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(refused({on_device, Side(static_cast<MemorySpace>(7), region.at(0), 16, 4), box, 0}) ==
        CUDA_ERROR_INVALID_VALUE);
  // Staged copies need exactly one bulk side, inside the bulk area.
  CHECK(client.Result(ipc::Memcpy3DStagedRequest{.copy = {on_device, in_block, box, 0}}) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(client.Result(ipc::Memcpy3DStagedRequest{
            .copy = {on_device, Side(MemorySpace::kBulk, (1 << 16) - 32, 16, 4), box, 0}}) ==
        CUDA_ERROR_INVALID_VALUE);
  for (int i = 0; i < 64; ++i) client.bulk()[i] = std::byte(200 - i);
  CHECK(client.Result(ipc::Memcpy3DStagedRequest{
            .copy = {in_block, Side(MemorySpace::kBulk, 0, 16, 4), box, 0}}) == CUDA_SUCCESS);
  CHECK(host[63] == std::byte(200 - 63));
}

TEST_CASE("memsets of 16- and 32-bit elements, aligned ones only") {
  TestClient client;
  const uint64_t pointer = client.Malloc(32);
  client.Post(ipc::MemsetRequest{
      .value = 0x01020304, .element_size = 4, .dst = pointer, .size = 32, .stream = 0});
  client.Post(ipc::MemsetRequest{
      .value = 0xa0b0c0d0, .element_size = 2, .dst = pointer + 4, .size = 4, .stream = 0});
  REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = pointer, .stream = 0, .dst = {0, 32}}) ==
          CUDA_SUCCESS);
  const uint8_t expected[12] = {4, 3, 2, 1, 0xd0, 0xc0, 0xd0, 0xc0, 4, 3, 2, 1};
  for (int i = 0; i < 12; ++i) CHECK(client.bulk()[i] == std::byte(expected[i]));
  // Misaligned, a size that is no multiple of the element, an element size CUDA has not.
  client.Post(ipc::MemsetRequest{
      .value = 0, .element_size = 4, .dst = pointer + 2, .size = 4, .stream = 0});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  client.Post(
      ipc::MemsetRequest{.value = 0, .element_size = 2, .dst = pointer, .size = 3, .stream = 0});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  client.Post(
      ipc::MemsetRequest{.value = 0, .element_size = 8, .dst = pointer, .size = 8, .stream = 0});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("errors of one-way calls surface at the next synchronising call, once") {
  TestClient client;
  client.Post(
      ipc::MemsetRequest{.value = 0, .element_size = 1, .dst = 0x10, .size = 8, .stream = 0});
  client.Post(ipc::LaunchKernelRequest{.grid = {1, 1, 1},
                                       .block = {1, 1, 1},
                                       .shared_bytes = 0,
                                       .flags = 0,
                                       .function = 99,
                                       .stream = 0,
                                       .cluster = {0, 0, 0},
                                       .library_call = 0});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  // The first failure is named: the call and why it was refused.
  CHECK(client.last_reason().find("Memset") != std::string::npos);
  CHECK(client.last_reason().find("CUDA_ERROR_INVALID_VALUE") != std::string::npos);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_SUCCESS);
}

// Registers `image` as the shim does: in pieces of at most `piece` bytes through the start of
// the bulk area. The last answer's result; the module is then client.Last's.
CUresult SendImage(TestClient& client, std::span<const std::byte> image, size_t piece = 1 << 16,
                   uint64_t hash = 0) {
  if (hash == 0) hash = ipc::ContentHash(image);
  CUresult result = CUDA_SUCCESS;
  for (size_t offset = 0; offset < image.size() && result == CUDA_SUCCESS; offset += piece) {
    const size_t size = std::min(piece, image.size() - offset);
    std::memcpy(client.bulk().data(), image.data() + offset, size);
    result = client.Result(ipc::RegisterFatbinRequest{
        .content_hash = hash, .image_size = image.size(), .offset = offset, .piece = {0, size}});
  }
  return result;
}

std::span<const std::byte> Bytes(const std::string& text) {
  return std::as_bytes(std::span(text.c_str(), text.size() + 1));  // with the NUL
}

TEST_CASE("fatbins that are not fatbins, or do not match their hash, are refused") {
  TestClient client;
  const std::vector<std::byte> junk(128, std::byte{0x5a});
  CHECK(SendImage(client, junk) == CUDA_ERROR_INVALID_IMAGE);
  CHECK(client.last_reason().find("not a fatbin") != std::string::npos);
  CHECK(SendImage(client, junk, 1 << 16, ipc::ContentHash(junk) + 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(SendImage(client, junk, 48, ipc::ContentHash(junk) + 1) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("module image pieces out of order, out of bounds or beyond the limit are refused") {
  TestClient client;
  auto piece = [&](uint64_t size, uint64_t offset, uint64_t bytes, uint64_t hash = 7) {
    return client.Result(ipc::RegisterFatbinRequest{
        .content_hash = hash, .image_size = size, .offset = offset, .piece = {0, bytes}});
  };
  CHECK(piece(ipc::kMaxModuleImage + 1, 0, 16) == CUDA_ERROR_INVALID_VALUE);
  CHECK(client.last_reason().find("limit") != std::string::npos);
  CHECK(piece(0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(piece(100, 0, 0) == CUDA_ERROR_INVALID_VALUE);             // an empty piece
  CHECK(piece(100, 0, 101) == CUDA_ERROR_INVALID_VALUE);           // past the image's end
  CHECK(piece(100, 0, (1 << 16) + 1) == CUDA_ERROR_INVALID_VALUE);  // past the bulk area's
  CHECK(piece(100, 50, 50) == CUDA_ERROR_INVALID_VALUE);           // no image was started
  REQUIRE(piece(100, 0, 50) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::RegisterFatbinResponse>().module == 0);   // more to come
  CHECK(piece(100, 60, 40) == CUDA_ERROR_INVALID_VALUE);           // a gap
  CHECK(client.last_reason().find("out of order") != std::string::npos);
  CHECK(piece(100, 50, 50) == CUDA_ERROR_INVALID_VALUE);           // the upload was dropped
  REQUIRE(piece(100, 0, 50) == CUDA_SUCCESS);
  CHECK(piece(100, 50, 50, 8) == CUDA_ERROR_INVALID_VALUE);        // another image's hash
  CHECK(piece(200, 50, 50) == CUDA_ERROR_INVALID_VALUE);           // another image's size
}

TEST_CASE("ending a session frees what the client left allocated") {
  const DriverApi& api = TheDevice().backend.api();
  size_t free_before = 0;
  size_t total = 0;
  REQUIRE(api.cuMemGetInfo(&free_before, &total) == CUDA_SUCCESS);
  TestClient client;
  client.Malloc(64 << 20);
  REQUIRE(client.Result(ipc::StreamCreateRequest{}) == CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::EventCreateRequest{}) == CUDA_SUCCESS);
  size_t free_during = 0;
  REQUIRE(api.cuMemGetInfo(&free_during, &total) == CUDA_SUCCESS);
  CHECK(free_during <= free_before - (64 << 20));
  client.End();
  size_t free_after = 0;
  REQUIRE(api.cuMemGetInfo(&free_after, &total) == CUDA_SUCCESS);
  CHECK(free_after == free_before);
}

std::vector<std::byte> ReadTestFatbin(const std::string& name) {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/" + name, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
  return {data, data + bytes.size()};
}

// Registers the test fatbin from `client`'s bulk area; returns the module handle.
uint64_t RegisterTestFatbin(TestClient& client, const std::string& name) {
  REQUIRE(SendImage(client, ReadTestFatbin(name)) == CUDA_SUCCESS);
  return client.Last<ipc::RegisterFatbinResponse>().module;
}

TEST_CASE("a fatbin is loaded once for all clients, and its kernels launch") {
  TestClient a(1);
  TestClient b(2);
  const size_t loaded_before = TheDevice().modules.loaded_count();
  const uint64_t module_a = RegisterTestFatbin(a, "scale_kernel.fatbin");
  const uint64_t module_b = RegisterTestFatbin(b, "scale_kernel.fatbin");
  CHECK(TheDevice().modules.loaded_count() == loaded_before + 1);

  const std::string name = "Scale";
  CHECK(a.Result(ipc::GetFunctionRequest{.module = module_b}, std::as_bytes(std::span(name))) ==
        CUDA_ERROR_INVALID_HANDLE);
  const std::string missing = "NoSuchKernel";
  CHECK(a.Result(ipc::GetFunctionRequest{.module = module_a}, std::as_bytes(std::span(missing))) ==
        CUDA_ERROR_NOT_FOUND);
  REQUIRE(a.Result(ipc::GetFunctionRequest{.module = module_a}, std::as_bytes(std::span(name))) ==
          CUDA_SUCCESS);
  const auto function = a.Last<ipc::GetFunctionResponse>();
  REQUIRE(function.param_count == 3);
  CHECK(function.param_buffer_size == 24);  // pointer at 0, int at 8, double at 16

  const int n = 40;
  const uint64_t data = a.Malloc(n * sizeof(int));
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = i;
  std::memcpy(a.bulk().data(), values.data(), n * sizeof(int));
  REQUIRE(a.Result(ipc::MemcpyHtoDRequest{.dst = data, .stream = 0, .src = {0, n * sizeof(int)}}) ==
          CUDA_SUCCESS);
  std::byte params[24] = {};
  const double factor = 3.0;
  std::memcpy(params, &data, 8);
  std::memcpy(params + 8, &n, 4);
  std::memcpy(params + 16, &factor, 8);
  const ipc::LaunchKernelRequest launch{.grid = {1, 1, 1},
                                        .block = {64, 1, 1},
                                        .shared_bytes = 0,
                                        .flags = 0,
                                        .function = function.function,
                                        .stream = 0,
                                        .cluster = {0, 0, 0},
                                        .library_call = 0};
  a.Post(launch, params);
  // Too few argument bytes, and another client's function handle: refused, reported at the
  // next synchronising call.
  a.Post(launch, std::span(params).first(16));
  CHECK(a.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  b.Post(launch, params);
  CHECK(b.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_HANDLE);
  // Cluster dimensions with a zero among them: refused the same way.
  ipc::LaunchKernelRequest half_cluster = launch;
  half_cluster.cluster = {2, 0, 1};
  a.Post(half_cluster, params);
  CHECK(a.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  REQUIRE(a.Result(ipc::MemcpyDtoHRequest{.src = data, .stream = 0, .dst = {0, n * sizeof(int)}}) ==
          CUDA_SUCCESS);
  std::memcpy(values.data(), a.bulk().data(), n * sizeof(int));
  for (int i = 0; i < n; ++i) CHECK(values[i] == 3 * i);

  // The module stays loaded while any client holds it.
  a.End();
  CHECK(TheDevice().modules.loaded_count() == loaded_before + 1);
  b.End();
  CHECK(TheDevice().modules.loaded_count() == loaded_before);
}

// NUL-terminated PTX text of one kernel named `name` (cuModuleLoadData's other image form).
std::vector<std::byte> PtxImage(const std::string& name) {
  const std::string text = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry " +
                           name + "(.param .u64 p) { ret; }\n";
  std::vector<std::byte> image(text.size() + 1);
  std::memcpy(image.data(), text.c_str(), text.size() + 1);
  return image;
}

TEST_CASE("kept modules stay loaded after their last holder, the most recently used first") {
  ModuleRegistry registry(TheDevice().backend, /*build_forms=*/false);
  registry.KeepModules(1);
  const std::vector<std::byte> first = PtxImage("first");
  const std::vector<std::byte> second = PtxImage("second");
  std::weak_ptr<SharedModule> kept;
  {
    auto module = registry.Register(first);
    REQUIRE(module.ok());
    kept = *module;
  }
  CHECK(registry.loaded_count() == 1);  // no holder but the registry
  const uint64_t indexed = registry.counters().kernels_indexed;
  {
    auto again = registry.Register(first);
    REQUIRE(again.ok());
    CHECK(*again == kept.lock());  // the same module, not read again
    CHECK(registry.counters().kernels_indexed == indexed);
  }
  REQUIRE(registry.Register(second).ok());  // the most recent now: the first goes
  CHECK(kept.expired());
  CHECK(registry.loaded_count() == 1);
  // A context reset finds none of them loaded.
  size_t loaded_at_reset = 1;
  CHECK(registry
            .ResetContext([&] {
              loaded_at_reset = registry.loaded_count();
              return absl::OkStatus();
            })
            .ok());
  CHECK(loaded_at_reset == 0);
}

TEST_CASE("streams, events, modules and module sizes beyond a client's limits are refused") {
  ServerContext limited = TheDevice().context;
  limited.limits.max_streams = 2;
  limited.limits.max_events = 1;
  limited.limits.max_modules = 1;
  limited.limits.max_module_bytes = 1 << 20;
  TestClient client(1, {}, limited);
  CHECK(client.Result(ipc::StreamCreateRequest{}) == CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::StreamCreateRequest{}) == CUDA_SUCCESS);
  const uint64_t stream = client.Last<ipc::StreamCreateResponse>().stream;
  CHECK(client.Result(ipc::StreamCreateRequest{}) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("--max-streams") != std::string::npos);
  CHECK(client.Result(ipc::StreamDestroyRequest{.stream = stream}) == CUDA_SUCCESS);
  CHECK(client.Result(ipc::StreamCreateRequest{}) == CUDA_SUCCESS);  // room again

  CHECK(client.Result(ipc::EventCreateRequest{}) == CUDA_SUCCESS);
  CHECK(client.Result(ipc::EventCreateRequest{}) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("--max-events") != std::string::npos);

  const std::vector<std::byte> fatbin = ReadTestFatbin("scale_kernel.fatbin");
  REQUIRE(SendImage(client, fatbin) == CUDA_SUCCESS);
  CHECK(SendImage(client, ReadTestFatbin("forms_kernel.fatbin")) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(client.last_reason().find("--max-modules") != std::string::npos);

  TestClient other(2, {}, limited);
  std::vector<std::byte> big(limited.limits.max_module_bytes + 1, std::byte{1});
  CHECK(SendImage(other, big) == CUDA_ERROR_INVALID_VALUE);
  CHECK(other.last_reason().find("--max-module-size") != std::string::npos);
}

TEST_CASE("fatbins registered at once from many threads are parsed and loaded once each") {
  const size_t loaded_before = TheDevice().modules.loaded_count();
  const std::vector<std::byte> scale = ReadTestFatbin("scale_kernel.fatbin");
  const std::vector<std::byte> forms = ReadTestFatbin("forms_kernel.fatbin");
  constexpr int kThreads = 8;
  std::vector<absl::StatusOr<std::shared_ptr<SharedModule>>> modules(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      TheDevice().backend.MakeCurrent().IgnoreError();
      modules[i] = TheDevice().modules.Register(i % 2 == 0 ? scale : forms);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i) {
    REQUIRE(modules[i].ok());
    CHECK(modules[i]->get() == modules[i % 2]->get());  // one module per image
  }
  CHECK(modules[0]->get() != modules[1]->get());
  CHECK(TheDevice().modules.loaded_count() == loaded_before + 2);
  modules.clear();
  CHECK(TheDevice().modules.loaded_count() == loaded_before);
}

// Launches `kernel` (one pointer parameter) of the fatbin on the client's default stream.
void LaunchPointerKernel(TestClient& client, const std::string& fatbin, const std::string& kernel,
                         uint64_t pointer, uint32_t blocks) {
  const uint64_t module = RegisterTestFatbin(client, fatbin);
  REQUIRE(client.Result(ipc::GetFunctionRequest{.module = module},
                        std::as_bytes(std::span(kernel))) == CUDA_SUCCESS);
  const uint64_t function = client.Last<ipc::GetFunctionResponse>().function;
  std::byte params[8];
  std::memcpy(params, &pointer, 8);
  client.Post(ipc::LaunchKernelRequest{.grid = {blocks, 1, 1},
                                       .block = {32, 1, 1},
                                       .shared_bytes = 0,
                                       .flags = 0,
                                       .function = function,
                                       .stream = 0,
                                       .cluster = {0, 0, 0},
                                       .library_call = 0},
              params);
  client.session().HandOver();
}

TEST_CASE("a teardown that would wait past its deadline abandons the client's resources") {
  // Client b's kernel never ends (until b goes): freeing a's memory waits for every kernel of
  // the context (cuMemFree), so a's teardown must give up at its deadline instead of hanging.
  TestClient b(2);
  const uint64_t flag = b.Malloc(sizeof(int));
  b.Post(ipc::MemsetRequest{.value = 0, .element_size = 1, .dst = flag, .size = sizeof(int),
                            .stream = 0});
  LaunchPointerKernel(b, "spin_kernel.fatbin", "SpinUntil", flag, 64);
  b.session().WaitIssued(b.session().Ticket());  // on the device, spinning
  auto a = std::make_unique<TestClient>(1);
  a->Malloc(1 << 20);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  CHECK_FALSE(a->session().Close(deadline));
  // Abandoned: the session is left alive for good (a thread may still use it); kept reachable,
  // so that LeakSanitizer does not take this deliberate leak for a mistake.
  static TestClient* const abandoned = a.release();
  static_cast<void>(abandoned);
  // b's own teardown cancels its kernel (emulated GPU): nothing of it is abandoned.
  CHECK(b.session().Close(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
}

// __device__ variables are per process in CUDA: two instances of one program must not share
// them even though they share the parsed fatbin.
TEST_CASE("a launch the driver refuses is named at the next synchronising call") {
  TestClient client;
  const uint64_t module = RegisterTestFatbin(client, "scale_kernel.fatbin");
  const std::string name = "Scale";
  REQUIRE(client.Result(ipc::GetFunctionRequest{.module = module},
                        std::as_bytes(std::span(name))) == CUDA_SUCCESS);
  const uint64_t function = client.Last<ipc::GetFunctionResponse>().function;
  const uint64_t data = client.Malloc(64);
  std::byte params[24] = {};
  std::memcpy(params, &data, 8);
  // More threads per block than any device has.
  client.Post(ipc::LaunchKernelRequest{.grid = {2, 1, 1},
                                       .block = {4096, 1, 1},
                                       .shared_bytes = 0,
                                       .flags = 0,
                                       .function = function,
                                       .stream = 0,
                                       .cluster = {0, 0, 0},
                                       .library_call = 0},
              params);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  CHECK(client.last_reason().find("kernel Scale<<<(2,1,1), (4096,1,1), 0>>>") != std::string::npos);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_SUCCESS);
}

TEST_CASE("launches beginning library calls count them per library; an unknown one is refused") {
  TestClient client;
  const uint64_t module = RegisterTestFatbin(client, "scale_kernel.fatbin");
  const std::string name = "Scale";
  REQUIRE(client.Result(ipc::GetFunctionRequest{.module = module},
                        std::as_bytes(std::span(name))) == CUDA_SUCCESS);
  ipc::LaunchKernelRequest launch{.grid = {1, 1, 1},
                                  .block = {32, 1, 1},
                                  .shared_bytes = 0,
                                  .flags = 0,
                                  .function = client.Last<ipc::GetFunctionResponse>().function,
                                  .stream = 0,
                                  .cluster = {0, 0, 0},
                                  .library_call = 0};
  const uint64_t data = client.Malloc(64);
  std::byte params[24] = {};  // n = 0: the kernel touches nothing
  std::memcpy(params, &data, 8);
  const auto launch_beginning = [&](uint32_t library) {
    launch.library_call = library;
    client.Post(launch, params);
  };
  for (const ipc::Library library : {ipc::Library::kNone, ipc::Library::kCudnn,
                                     ipc::Library::kCublas, ipc::Library::kCudnn}) {
    launch_beginning(static_cast<uint32_t>(library));
  }
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_SUCCESS);
  launch_beginning(ipc::kLibraryCount + 1);
  launch_beginning(UINT32_MAX);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  CHECK(client.last_reason().find("names no library") != std::string::npos);
  const ipc::LibraryCalls calls = client.session().Status().library_calls;
  CHECK(calls[ipc::Library::kCublas] == 1);
  CHECK(calls[ipc::Library::kCublasLt] == 0);
  CHECK(calls[ipc::Library::kCudnn] == 2);
}

TEST_CASE("clients sharing a fatbin with module state get modules of their own") {
  TestClient a(1);
  TestClient b(2);
  const size_t loaded_before = TheDevice().modules.loaded_count();
  const uint64_t modules[2] = {RegisterTestFatbin(a, "counter_kernel.fatbin"),
                               RegisterTestFatbin(b, "counter_kernel.fatbin")};
  CHECK(TheDevice().modules.loaded_count() == loaded_before + 2);
  TestClient* clients[2] = {&a, &b};
  for (int c = 0; c < 2; ++c) {
    TestClient& client = *clients[c];
    const std::string name = "Bump";
    REQUIRE(client.Result(ipc::GetFunctionRequest{.module = modules[c]},
                          std::as_bytes(std::span(name))) == CUDA_SUCCESS);
    const uint64_t function = client.Last<ipc::GetFunctionResponse>().function;
    const uint64_t out = client.Malloc(sizeof(int));
    const ipc::LaunchKernelRequest launch{.grid = {1, 1, 1},
                                          .block = {32, 1, 1},
                                          .shared_bytes = 0,
                                          .flags = 0,
                                          .function = function,
                                          .stream = 0,
                                          .cluster = {0, 0, 0},
                                          .library_call = 0};
    for (int launches = 0; launches < c + 1; ++launches) {
      client.Post(launch, std::as_bytes(std::span(&out, 1)));
    }
    REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = out, .stream = 0, .dst = {0, 4}}) ==
            CUDA_SUCCESS);
    int counter = 0;
    std::memcpy(&counter, client.bulk().data(), sizeof(counter));
    CHECK(counter == c + 1);  // this client's launches only
  }
}

// cuModuleLoadData's other image: PTX text with its NUL, loaded and unloaded by the driver API.
TEST_CASE("PTX images load, their functions launch, and unloading forgets the functions") {
  TestClient client;
  const std::string ptx =
      ".version 7.0\n.target sm_50\n.address_size 64\n"
      ".visible .entry Fill(.param .u64 out)\n{\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<3>;\n"
      "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
      "  mov.u32 %r1, 77;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";
  // Larger than the bulk area: it arrives in pieces.
  std::string padded = ptx;
  while (padded.size() < 3 * client.bulk().size()) padded += "// padding to pass in pieces\n";
  const bool in_pieces = GENERATE(false, true);
  REQUIRE(SendImage(client, Bytes(in_pieces ? padded : ptx), 40000) == CUDA_SUCCESS);
  const uint64_t module = client.Last<ipc::RegisterFatbinResponse>().module;
  REQUIRE(module != 0);
  const std::string name = "Fill";
  REQUIRE(client.Result(ipc::GetFunctionRequest{.module = module},
                        std::as_bytes(std::span(name))) == CUDA_SUCCESS);
  const uint64_t function = client.Last<ipc::GetFunctionResponse>().function;
  const uint64_t out = client.Malloc(sizeof(int));
  const ipc::LaunchKernelRequest launch{.grid = {1, 1, 1},
                                        .block = {1, 1, 1},
                                        .shared_bytes = 0,
                                        .flags = 0,
                                        .function = function,
                                        .stream = 0,
                                        .cluster = {0, 0, 0},
                                        .library_call = 0};
  client.Post(launch, std::as_bytes(std::span(&out, 1)));
  REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = out, .stream = 0, .dst = {0, 4}}) ==
          CUDA_SUCCESS);
  int value = 0;
  std::memcpy(&value, client.bulk().data(), sizeof(value));
  CHECK(value == 77);

  REQUIRE(client.Result(ipc::ModuleUnloadRequest{.module = module}) == CUDA_SUCCESS);
  CHECK(client.Result(ipc::ModuleUnloadRequest{.module = module}) == CUDA_ERROR_INVALID_HANDLE);
  client.Post(launch, std::as_bytes(std::span(&out, 1)));
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_HANDLE);
}

TEST_CASE("a cubin image is refused with an explanation") {
  TestClient client;
  const char elf[] =
      "\x7f"
      "ELF\x02\x01\x01 not really a cubin";
  CHECK(SendImage(client, std::as_bytes(std::span(elf))) == CUDA_ERROR_NO_BINARY_FOR_GPU);
  CHECK(client.last_reason().find("PTX") != std::string::npos);
}

}  // namespace
}  // namespace tally::server

namespace tally::server {
namespace {

TEST_CASE("host function answers for gates nobody waits for, and unknown kinds, are refused") {
  TestClient client;
  client.Post(ipc::HostCallbackDoneRequest{.reserved = 0, .gate = 12345});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  // This session has no callback ring (no client process to call back).
  client.Post(ipc::LaunchHostFuncRequest{
      .kind = 0, .stream = 0, .app_stream = 0, .function = 1, .data = 0});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_SUCCESS);
}

// Sessions of a server that runs everybody's cuBLAS GEMMs in the tests' stand-in for NVIDIA's
// cuBLAS (tests/vendor_libraries/), sharing the one emulated device.
struct VendorDevice {
  VendorDevice()
      : vendor(LoadVendorLibraries(TALLY_TEST_FAKE_VENDOR_DIR, LibraryKernelRule::kVendor,
                                   /*emulated=*/true)),
        context(TheDevice().context) {
    context.vendor = &vendor;
  }
  VendorLibraries vendor;
  ServerContext context;
};

VendorDevice& TheVendorDevice() {
  static VendorDevice* device = new VendorDevice;
  return *device;
}

// C = alpha * A * B in f32, column major, all n x n, host scalars.
ipc::VendorGemm SquareGemm(int64_t n, uint64_t a, uint64_t b, uint64_t c, float alpha) {
  ipc::VendorGemm call{};
  call.op_a = call.op_b = 0;  // CUBLAS_OP_N
  call.m = call.n = call.k = n;
  call.lda = call.ldb = call.ldc = n;
  call.batch = 1;
  call.type_a = call.type_b = call.type_c = 0;  // CUDA_R_32F
  call.compute = 68;                            // CUBLAS_COMPUTE_32F
  call.a = a;
  call.b = b;
  call.c = c;
  const float beta = 0;
  std::memcpy(call.alpha, &alpha, sizeof(alpha));
  std::memcpy(call.beta, &beta, sizeof(beta));
  return call;
}

TEST_CASE("a vendor GEMM runs on the client's stream with its memory, and nowhere else") {
  REQUIRE(TheVendorDevice().vendor.blas != nullptr);
  TestClient client(70, {}, TheVendorDevice().context);
  REQUIRE(client.Result(ipc::LibraryModesRequest{}) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::LibraryModesResponse>().vendor ==
        (ipc::LibraryBit(ipc::Library::kCublas) | ipc::LibraryBit(ipc::Library::kCublasLt)));
  constexpr int64_t kN = 4;
  constexpr uint64_t kBytes = kN * kN * sizeof(float);
  const uint64_t a = client.Malloc(kBytes), b = client.Malloc(kBytes), c = client.Malloc(kBytes);
  float values[2 * kN * kN];
  for (int i = 0; i < kN * kN; ++i) {
    values[i] = static_cast<float>(i);                      // A
    values[kN * kN + i] = i % (kN + 1) == 0 ? 1.0f : 0.0f;  // B: the identity
  }
  std::memcpy(client.bulk().data(), values, sizeof(values));
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{.dst = a, .stream = 0, .src = {0, kBytes}}) ==
          CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{.dst = b, .stream = 0, .src = {kBytes, kBytes}}) ==
          CUDA_SUCCESS);
  client.Post(ipc::VendorGemmRequest{.call = SquareGemm(kN, a, b, c, 3.0f)});
  REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = c, .stream = 0, .dst = {0, kBytes}}) ==
          CUDA_SUCCESS);
  float product[kN * kN];
  std::memcpy(product, client.bulk().data(), sizeof(product));
  for (int i = 0; i < kN * kN; ++i) CHECK(product[i] == 3.0f * static_cast<float>(i));
  CHECK(client.session().Status().vendor_library_calls[ipc::Library::kCublas] == 1);

  // C reaching past its allocation, and another client's memory, are refused before the call
  // reaches the library: the error comes at the next synchronising call.
  client.Post(ipc::VendorGemmRequest{.call = SquareGemm(kN, a, b, c + 4, 1.0f)});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  TestClient other(71, {}, TheVendorDevice().context);
  const uint64_t theirs = other.Malloc(kBytes);
  client.Post(ipc::VendorGemmRequest{.call = SquareGemm(kN, a, theirs, c, 1.0f)});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  ipc::VendorGemm small_ld = SquareGemm(kN, a, b, c, 1.0f);
  small_ld.lda = kN - 1;
  client.Post(ipc::VendorGemmRequest{.call = small_ld});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_SUCCESS);  // reported once
}

TEST_CASE("a vendor cuBLASLt matmul applies its bias and ReLU, and its bias must be the client's") {
  TestClient client(73, {}, TheVendorDevice().context);
  constexpr int64_t kN = 2;
  constexpr uint64_t kBytes = kN * kN * sizeof(float);
  const uint64_t a = client.Malloc(kBytes), b = client.Malloc(kBytes), d = client.Malloc(kBytes);
  const uint64_t bias = client.Malloc(kN * sizeof(float));
  // A = [1 3; 2 4] (column major), B the identity, bias (10, -10): D = relu(A + bias).
  const float values[] = {1, 2, 3, 4, 1, 0, 0, 1, 10, -10};
  std::memcpy(client.bulk().data(), values, sizeof(values));
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{.dst = a, .stream = 0, .src = {0, kBytes}}) ==
          CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{.dst = b, .stream = 0, .src = {kBytes, kBytes}}) ==
          CUDA_SUCCESS);
  REQUIRE(client.Result(ipc::MemcpyHtoDRequest{
              .dst = bias, .stream = 0, .src = {2 * kBytes, kN * sizeof(float)}}) == CUDA_SUCCESS);
  ipc::VendorLtMatmul call{};
  call.m = call.n = call.k = kN;
  call.type_a = call.type_b = call.type_c = call.type_d = call.bias_type = 0;  // CUDA_R_32F
  call.scale_type = 0;
  call.compute = 68;  // CUBLAS_COMPUTE_32F
  call.epilogue = 6;  // CUBLASLT_EPILOGUE_RELU_BIAS
  call.lda = call.ldb = call.ldc = call.ldd = kN;
  call.batch_a = call.batch_b = call.batch = 1;
  call.a = a;
  call.b = b;
  call.c = call.d = d;
  call.bias = bias;
  const float one = 1, zero = 0;
  std::memcpy(call.alpha, &one, sizeof(one));
  std::memcpy(call.beta, &zero, sizeof(zero));
  client.Post(ipc::VendorLtMatmulRequest{.call = call});
  REQUIRE(client.Result(ipc::MemcpyDtoHRequest{.src = d, .stream = 0, .dst = {0, kBytes}}) ==
          CUDA_SUCCESS);
  float product[kN * kN];
  std::memcpy(product, client.bulk().data(), sizeof(product));
  CHECK(product[0] == 11.0f);  // 1 + 10
  CHECK(product[1] == 0.0f);   // relu(2 - 10)
  CHECK(product[2] == 13.0f);  // 3 + 10
  CHECK(product[3] == 0.0f);   // relu(4 - 10)
  CHECK(client.session().Status().vendor_library_calls[ipc::Library::kCublasLt] == 1);
  call.bias = bias + sizeof(float);  // its second element is the allocation's last
  client.Post(ipc::VendorLtMatmulRequest{.call = call});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("without a vendor library, a client's vendor calls are refused") {
  TestClient client(72);
  REQUIRE(client.Result(ipc::LibraryModesRequest{}) == CUDA_SUCCESS);
  CHECK(client.Last<ipc::LibraryModesResponse>().vendor == 0);
  const uint64_t m = client.Malloc(64);
  client.Post(ipc::VendorGemmRequest{.call = SquareGemm(2, m, m, m, 1.0f)});
  CHECK(client.Result(ipc::DeviceSynchronizeRequest{}) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(client.session().Status().vendor_library_calls[ipc::Library::kCublas] == 0);
}

}  // namespace
}  // namespace tally::server
