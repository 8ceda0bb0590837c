// libFuzzer target for whole server sessions: the input is decoded into the steps of a client
// (requests of ipc/cuda_calls.def with their fields and tails, writes into the bulk area, module
// images) and fed through the server's call dispatch against the emulated GPU, as the serving
// thread would. Values the server answered with (handles, device pointers) flow into later
// requests, so that the fuzzer reaches past handle validation. Property: no crash, no sanitizer
// report, no hang, and the session tears down with everything freed.
//
// Input format, repeated until the input ends (reads past the end give zeros):
//   u8 step: a request (index into cuda_calls.def), a bulk write, or a module image
//   request:     u8 mask, kFieldBytes of fields, u8 tail size, the tail; bit i of the mask
//                replaces the fields' 8-byte word i by an answered value (the word's low byte
//                counts back from the latest, the next byte is added, for interior pointers)
//   bulk write:  u16 offset, u8 size, the bytes
//   image:       u16 size, the bytes (sent in pieces through the bulk area with its hash)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "ipc/content_hash.h"
#include "ipc/cuda_calls.h"
#include "scheduler/policy.h"
#include "server/call_dispatch.h"
#include "server/server.h"

namespace tally::server {
namespace {

// Every request of the protocol: its type and its size without a tail.
struct CallKind {
  uint32_t type;
  size_t size;
};
constexpr CallKind kCalls[] = {
#define TALLY_CUDA_CALL(name, id, mode) {ipc::name##Request::kType, sizeof(ipc::name##Request)},
#include "ipc/cuda_calls.def"
};
constexpr size_t kCallCount = std::size(kCalls);
// Steps beyond the requests.
constexpr size_t kBulkWrite = kCallCount, kImage = kCallCount + 1, kStepKinds = kCallCount + 2;

// Fixed, so that seeds need not know each request's size; every request fits.
constexpr size_t kFieldBytes = 288;
static_assert(std::ranges::all_of(kCalls, [](const CallKind& c) { return c.size <= kFieldBytes; }));
constexpr size_t kBulkBytes = 1 << 16;
constexpr size_t kMaxSteps = 256;
// Generous for the emulated GPU, and bounded: libFuzzer reports a hang long before it.
constexpr auto kTeardownTimeout = std::chrono::seconds(5);

// The fuzz input, front to back; reads past its end give zeros (an empty span for Bytes).
class InputReader {
 public:
  explicit InputReader(std::span<const uint8_t> input) : input_(input) {}
  bool done() const { return input_.empty(); }
  uint8_t Byte() { return done() ? 0 : Bytes(1)[0]; }
  uint16_t U16() {
    const uint16_t low = Byte();
    return static_cast<uint16_t>(low | Byte() << 8);
  }
  std::span<const uint8_t> Bytes(size_t count) {
    const std::span<const uint8_t> bytes = input_.first(std::min(count, input_.size()));
    input_ = input_.subspan(bytes.size());
    return bytes;
  }

 private:
  std::span<const uint8_t> input_;
};

// Values the server answered with, offered back to later requests as a client would.
class AnsweredValues {
 public:
  explicit AnsweredValues(uint64_t host_region) { Add(host_region); }
  void Add(uint64_t value) {
    values_[next_++ % values_.size()] = value;
    count_ = std::min(count_ + 1, values_.size());
  }
  // Every 8-byte word of a response's payload.
  void AddWords(std::span<const std::byte> response) {
    for (size_t at = sizeof(ipc::MessageHeader); at + 8 <= response.size(); at += 8) {
      uint64_t word;
      std::memcpy(&word, response.data() + at, sizeof(word));
      Add(word);
    }
  }
  // The word's low byte counts back from the latest value, the next byte is added.
  uint64_t Pick(uint64_t word) const {
    const size_t back = (word & 0xff) % count_;
    return values_[(next_ - 1 - back) % values_.size()] + ((word >> 8) & 0xff);
  }

 private:
  std::array<uint64_t, 64> values_{};
  size_t next_ = 0;
  size_t count_ = 0;
};

// The emulated device and the server's shared state, as tally-server sets them up; one for
// all inputs. Small per-client limits keep each input's memory bounded under the sanitizers.
struct Device {
  Device()
      : backend(*Backend::Load({.emulate = true, .device = 0,
                                .emulator_library = TALLY_FUZZ_EMULATOR_LIBRARY})),
        info(CurrentDeviceInfo(backend)),
        modules(backend, /*build_forms=*/false),
        dispatcher(*Dispatcher::Create(backend, scheduler::MakeFifoPolicy(), nullptr,
                                       std::chrono::milliseconds(1),
                                       [this] { backend.MakeCurrent().IgnoreError(); })),
        context{.backend = backend,
                .modules = modules,
                .dispatcher = *dispatcher,
                .device_info = info,
                .limits = {.max_queued_commands = 256,
                           .max_streams = 16,
                           .max_events = 64,
                           .max_modules = 8,
                           .max_module_bytes = 1 << 20,
                           .memory_limit = 64 << 20,
                           .pinned_limit = 1 << 20}} {}
  static ipc::GetDeviceInfoResponse CurrentDeviceInfo(const Backend& backend) {
    backend.MakeCurrent().IgnoreError();  // for the fuzzing thread
    return *QueryDeviceInfo(backend);
  }
  uint64_t FreeMemory() const {
    size_t free_bytes = 0, total_bytes = 0;
    backend.api().cuMemGetInfo(&free_bytes, &total_bytes);
    return free_bytes;
  }
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

// Page-aligned memory standing in for the client's host region (page-locked blocks).
struct HostRegion {
  static constexpr size_t kPage = 4096, kSize = 16 * kPage;
  std::unique_ptr<std::byte, decltype(&std::free)> bytes{
      static_cast<std::byte*>(std::aligned_alloc(kPage, kSize)), std::free};
  std::span<std::byte> span() { return {bytes.get(), kSize}; }
};

// One client's session, driven step by step as the serving thread drives it.
class FuzzClient {
 public:
  FuzzClient()
      : bulk_(kBulkBytes),
        session_(*Session::Create(TheDevice().context, Info(), ipc::BulkArea(bulk_),
                                  region_.span())),
        answered_(reinterpret_cast<uint64_t>(region_.bytes.get())) {}

  // False once the session ended (a malformed message, as the server would end it).
  bool Step(InputReader& input) {
    const size_t kind = input.Byte() % kStepKinds;
    if (kind == kBulkWrite) {
      const size_t offset = input.U16();
      const std::span<const uint8_t> bytes = input.Bytes(input.Byte());
      std::memcpy(bulk_.data() + offset, bytes.data(),
                  std::min(bytes.size(), bulk_.size() - offset));
      return true;
    }
    if (kind == kImage) return SendImage(input.Bytes(input.U16()));
    return Request(kCalls[kind], input);
  }

  // Ends the session as the server does when the client goes: all must be freed in time.
  bool Close() {
    session_->HandOver();
    return session_->Close(std::chrono::steady_clock::now() + kTeardownTimeout);
  }

 private:
  static ipc::ClientInfo Info() {
    ipc::ClientInfo info;
    info.client_id = ClientId(1);
    return info;
  }

  bool Request(const CallKind& call, InputReader& input) {
    const uint8_t mask = input.Byte();
    std::array<uint8_t, kFieldBytes> fields{};
    const std::span<const uint8_t> given = input.Bytes(kFieldBytes);
    std::ranges::copy(given, fields.begin());
    for (size_t word = 0; word < call.size / 8 && word < 8; ++word) {
      if (((mask >> word) & 1) == 0) continue;
      uint64_t value;
      std::memcpy(&value, fields.data() + word * 8, sizeof(value));
      value = answered_.Pick(value);
      std::memcpy(fields.data() + word * 8, &value, sizeof(value));
    }
    const std::span<const uint8_t> tail = input.Bytes(input.Byte());
    return Send(call.type, std::as_bytes(std::span(fields).first(call.size)),
                std::as_bytes(tail));
  }

  // A module image as the client sends it: pieces through the bulk area, with its hash.
  bool SendImage(std::span<const uint8_t> image) {
    const uint64_t hash = ipc::ContentHash(std::as_bytes(image));
    for (size_t offset = 0; offset < image.size(); offset += bulk_.size()) {
      const size_t size = std::min(bulk_.size(), image.size() - offset);
      std::memcpy(bulk_.data(), image.data() + offset, size);
      const ipc::RegisterFatbinRequest request{
          .content_hash = hash, .image_size = image.size(), .offset = offset, .piece = {0, size}};
      if (!Send(request.kType, std::as_bytes(std::span(&request, 1)), {})) return false;
    }
    return true;
  }

  bool Send(uint32_t type, std::span<const std::byte> fields, std::span<const std::byte> tail) {
    const ipc::MessageHeader header{type, 0, ++sequence_,
                                    static_cast<uint32_t>(fields.size() + tail.size()), 0};
    std::vector<std::byte> record(sizeof(header));
    std::memcpy(record.data(), &header, sizeof(header));
    record.insert(record.end(), fields.begin(), fields.end());
    record.insert(record.end(), tail.begin(), tail.end());
    absl::StatusOr<Outcome> outcome = HandleCall(*session_, record);
    if (!outcome.ok()) return false;
    // A response made later (a wait) is made here: one client thread waits for it.
    if (auto* later = std::get_if<LaterResponse>(&*outcome)) answered_.AddWords((*later)());
    if (auto* now = std::get_if<std::vector<std::byte>>(&*outcome)) answered_.AddWords(*now);
    return true;
  }

  HostRegion region_;
  std::vector<std::byte> bulk_;
  std::unique_ptr<Session> session_;
  AnsweredValues answered_;
  uint64_t sequence_ = 0;
};

}  // namespace
}  // namespace tally::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tally::server;
  const uint64_t free_before = TheDevice().FreeMemory();
  InputReader input({data, size});
  {
    FuzzClient client;
    for (size_t step = 0; step < kMaxSteps && !input.done(); ++step) {
      if (!client.Step(input)) break;
    }
    // A session that cannot be closed in time, or one that leaves device memory behind, is a
    // finding: abort, which libFuzzer reports with the input.
    if (!client.Close()) std::abort();
  }
  if (TheDevice().FreeMemory() != free_before) std::abort();
  return 0;
}
