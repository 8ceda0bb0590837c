#include "server/device_output_ring.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "cuda_abi/device_output_ring.h"
#include "cuda_abi/device_printf.h"
#include "common/log.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t RoundUp8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// The NUL-terminated string at `at` of `bytes`; nullopt when it has no NUL there.
std::optional<std::string_view> StringAt(std::span<const std::byte> bytes, uint64_t at) {
  if (at >= bytes.size()) return std::nullopt;
  const char* begin = reinterpret_cast<const char*>(bytes.data()) + at;
  const void* nul = std::memchr(begin, 0, bytes.size() - at);
  if (nul == nullptr) return std::nullopt;
  return std::string_view(begin, static_cast<const char*>(nul) - begin);
}

// A record's arguments as the device wrote them: 8-byte words and inline strings.
class RecordArguments : public PrintfArguments {
 public:
  RecordArguments(std::span<const std::byte> body, uint64_t cursor)
      : body_(body), cursor_(cursor) {}

  std::optional<uint64_t> Scalar(uint32_t size) override {
    if (cursor_ + 8 > body_.size()) return std::nullopt;
    uint64_t word = 0;
    std::memcpy(&word, body_.data() + cursor_, sizeof(word));
    cursor_ += 8;
    return size == 4 ? word & 0xffffffffu : word;
  }
  std::optional<std::string> String() override {
    const std::optional<std::string_view> text = StringAt(body_, cursor_);
    if (!text) return std::nullopt;
    cursor_ += RoundUp8(text->size() + 1);
    return std::string(*text);
  }

 private:
  std::span<const std::byte> body_;
  uint64_t cursor_;
};

// The text of one record (its bytes after the header); nullopt when it is not well-formed.
std::optional<std::string> FormatRecord(std::span<const std::byte> body) {
  const std::optional<std::string_view> format = StringAt(body, 0);
  if (!format) return std::nullopt;
  RecordArguments arguments(body, RoundUp8(format->size() + 1));
  return FormatDevicePrintf(*format, arguments);
}

}  // namespace

std::vector<std::byte> DeviceOutputRingReader::TakeRecord(uint64_t position, uint32_t size) {
  std::vector<std::byte> record(size);
  std::byte* data = ring_ + kRingDataOffset;
  const uint64_t at = position & (capacity_ - 1);
  const uint64_t first = std::min<uint64_t>(size, capacity_ - at);
  std::memcpy(record.data(), data + at, first);
  std::memcpy(record.data() + first, data, size - first);
  std::memset(data + at, 0, first);
  std::memset(data, 0, size - first);
  return record;
}

void DeviceOutputRingReader::Drain(const Print& print) {
  if (broken_) return;
  const uint64_t start = tail_;
  while (true) {
    auto& header_word =
        *reinterpret_cast<uint64_t*>(ring_ + kRingDataOffset + (tail_ & (capacity_ - 1)));
    const uint64_t header = std::atomic_ref(header_word).load(std::memory_order_acquire);
    if (header == 0) break;  // not written yet
    const uint32_t size = RecordSize(header);
    const uint32_t stream = RecordStream(header);
    if ((header & kRecordMagicMask) != kRecordMagic || size < 8 || size % 8 != 0 ||
        size > capacity_ || (stream != 1 && stream != 2)) {
      TALLY_LOG_WARN(
          "a client's device output ring holds a malformed record (header {:#x}): its kernels "
          "overwrote it; the client's later printf output is dropped",
          header);
      broken_ = true;
      break;
    }
    const std::vector<std::byte> record = TakeRecord(tail_, size);
    tail_ += size;
    const std::optional<std::string> text = FormatRecord(std::span(record).subspan(8));
    if (text) {
      print(stream, *text);
    } else {
      TALLY_LOG_WARN("a client's device printf record is malformed (its kernels overwrote it)");
    }
  }
  // The zeroed space goes back to the writers after the zeroes (release).
  if (tail_ != start) {
    std::atomic_ref(*reinterpret_cast<uint64_t*>(ring_)).store(tail_, std::memory_order_release);
  }
}

absl::StatusOr<std::unique_ptr<DeviceOutputRing>> DeviceOutputRing::Create(const DriverApi& api,
                                                                           uint64_t capacity) {
  if (capacity < 64 || !std::has_single_bit(capacity)) {
    return absl::InvalidArgumentError("a device output ring's capacity is a power of two >= 64");
  }
  // Whole pages: what cuMemHostRegister maps.
  const uint64_t bytes = (kRingDataOffset + capacity + kPage - 1) / kPage * kPage;
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(kPage, bytes));
  if (memory == nullptr) return absl::ResourceExhaustedError("no memory for a device output ring");
  std::memset(memory, 0, bytes);
  // From here the destructor frees whatever was made.
  std::unique_ptr<DeviceOutputRing> ring(new DeviceOutputRing(api, memory, capacity));
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuMemHostRegister(memory, bytes, CU_MEMHOSTREGISTER_DEVICEMAP),
                                "cuMemHostRegister (device output ring)"));
  ring->registered_ = true;
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuMemHostGetDevicePointer(&ring->ring_on_device_, memory, 0),
                                "cuMemHostGetDevicePointer (device output ring)"));
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuStreamCreateWithPriority(&ring->stream_, CU_STREAM_NON_BLOCKING, 0),
              "cuStreamCreateWithPriority (device output ring)"));
  constexpr size_t kControlBytes = sizeof(uint64_t);  // the head
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuMemAlloc(&ring->control_, kControlBytes), "cuMemAlloc (device output ring)"));
  CUresult result = api.cuMemsetD8Async(ring->control_, 0, kControlBytes, ring->stream_);
  if (result == CUDA_SUCCESS) result = api.cuStreamSynchronize(ring->stream_);
  TALLY_RETURN_IF_ERROR(CheckCu(result, "zeroing a device output ring's control block"));
  return ring;
}

DeviceOutputRing::~DeviceOutputRing() {
  // Errors are expected after a context reset, which took the driver's part with it.
  if (control_ != 0) api_.cuMemFree(control_);
  if (stream_ != nullptr) api_.cuStreamDestroy(stream_);
  if (registered_) api_.cuMemHostUnregister(ring_);
  std::free(ring_);
}

absl::Status DeviceOutputRing::Bind(CUdeviceptr variable, size_t size) const {
  const uint64_t binding[3] = {control_, ring_on_device_, capacity_};
  if (size < sizeof(binding)) {
    return absl::InternalError("the module's device output variable is too small");
  }
  CUresult result = api_.cuMemcpyHtoDAsync(variable, binding, sizeof(binding), stream_);
  if (result == CUDA_SUCCESS) result = api_.cuStreamSynchronize(stream_);
  return CheckCu(result, "binding a module to its client's device output ring");
}

}  // namespace tally::server
