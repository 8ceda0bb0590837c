// SPSC ring tests: record order and contents across wrap-around, full and oversized cases, every
// record size, and a two-thread stress run whose checksums prove nothing was lost or reordered.
#include "ipc/spsc_ring.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <vector>

#include "ipc/testing/example_messages.h"
#include "ipc/testing/ring_memory.h"

namespace tally::ipc {
namespace {

using testing::Checksum;
using testing::RingMemory;

// Bounded waits: a bug shows up as a failed test, never as a hung one.
WaitOptions Bounded(int spin_iterations = kDefaultSpinIterations) {
  WaitOptions options;
  options.timeout = absl::Seconds(10);
  options.spin_iterations = spin_iterations;
  return options;
}

std::vector<std::byte> Pattern(size_t size, uint64_t seed) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((seed * 131 + i * 7) & 0xff);
  return bytes;
}

std::vector<std::byte> ReadOne(RingConsumer& consumer) {
  auto record = consumer.TryPeek();
  REQUIRE(record.ok());
  REQUIRE(record->has_value());
  std::vector<std::byte> bytes((*record)->begin(), (*record)->end());
  REQUIRE(consumer.Release().ok());
  return bytes;
}

TEST_CASE("records come out in order and intact across many wrap-arounds") {
  RingMemory memory(256);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  std::deque<std::vector<std::byte>> in_flight;
  std::mt19937_64 random(1);
  for (uint64_t i = 0; i < 5000; ++i) {
    const size_t size = random() % (producer.max_record_size() + 1);
    std::vector<std::byte> bytes = Pattern(size, i);
    while (!producer.TryReserve(size).ok()) {  // full: drain one and retry
      REQUIRE(!in_flight.empty());
      CHECK(ReadOne(consumer) == in_flight.front());
      in_flight.pop_front();
    }
    auto reserved = producer.TryReserve(size);
    REQUIRE(reserved.ok());
    std::copy(bytes.begin(), bytes.end(), reserved->begin());
    REQUIRE(producer.Commit().ok());
    in_flight.push_back(std::move(bytes));
  }
  while (!in_flight.empty()) {
    CHECK(ReadOne(consumer) == in_flight.front());
    in_flight.pop_front();
  }
  auto empty = consumer.TryPeek();
  REQUIRE(empty.ok());
  CHECK(!empty->has_value());
  // 5000 records in 256 bytes went around the buffer many times.
  CHECK(memory.control().head.load() > 100 * memory.capacity());
}

TEST_CASE("a full ring refuses new records until the consumer frees room") {
  RingMemory memory(256);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  int written = 0;
  while (producer.TryReserve(24).ok()) {
    REQUIRE(producer.Commit().ok());
    ++written;
  }
  CHECK(written == 256 / 32);
  CHECK(absl::IsResourceExhausted(producer.TryReserve(24).status()));
  ReadOne(consumer);
  CHECK(producer.TryReserve(24).ok());
}

TEST_CASE("records larger than half the ring are refused, every smaller size works") {
  RingMemory memory(1024);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  CHECK(absl::IsInvalidArgument(producer.TryReserve(producer.max_record_size() + 1).status()));
  for (size_t size = 0; size <= producer.max_record_size(); ++size) {
    std::vector<std::byte> bytes = Pattern(size, size);
    REQUIRE(producer.Write(bytes, Bounded()).ok());
    CHECK(ReadOne(consumer) == bytes);
  }
}

TEST_CASE("waits end at their timeout and when the liveness check fails") {
  RingMemory memory(256);
  RingConsumer consumer = memory.Consumer();
  WaitOptions options;
  options.timeout = absl::Milliseconds(30);
  const auto start = std::chrono::steady_clock::now();
  CHECK(absl::IsDeadlineExceeded(consumer.Peek(options).status()));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));

  options.timeout = absl::InfiniteDuration();
  options.liveness = [] { return absl::UnavailableError("peer gone"); };
  CHECK(absl::IsUnavailable(consumer.Peek(options).status()));
}

TEST_CASE("a producer waiting for room is woken by the consumer") {
  RingMemory memory(256);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  while (producer.TryReserve(100).ok()) REQUIRE(producer.Commit().ok());
  absl::Status drained;
  std::jthread drain([&] {  // no Catch2 assertions off the main thread: they are not thread-safe
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    drained = consumer.TryPeek().status();
    if (drained.ok()) drained = consumer.Release();
  });
  CHECK(producer.Reserve(100, Bounded(0)).ok());
  drain.join();
  CHECK(drained.ok());
}

// Producer and consumer threads, random sizes; each record carries its index and a checksum.
// Threads are jthreads: a failed assertion on the main thread still joins them (their waits are
// bounded) instead of terminating the test binary.
void StressRun(uint64_t capacity, int records, int spin_iterations, size_t max_size) {
  RingMemory memory(capacity);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  max_size = std::min(max_size, producer.max_record_size());
  absl::Status written;
  std::jthread writer([&] {
    std::mt19937_64 random(7);
    for (int i = 0; i < records && written.ok(); ++i) {
      const size_t size = 16 + random() % (max_size - 15);
      auto reserved = producer.Reserve(size, Bounded(spin_iterations));
      if (!reserved.ok()) {
        written = reserved.status();
        break;
      }
      const uint64_t index = static_cast<uint64_t>(i);
      std::vector<std::byte> body = Pattern(size - 16, index ^ random());
      const uint64_t sum = Checksum(body);
      std::memcpy(reserved->data(), &index, 8);
      std::memcpy(reserved->data() + 8, &sum, 8);
      std::copy(body.begin(), body.end(), reserved->begin() + 16);
      written = producer.Commit();
    }
  });
  int bad = 0;
  for (int i = 0; i < records; ++i) {
    auto record = consumer.Peek(Bounded(spin_iterations));
    if (!record.ok()) {
      writer.join();
      FAIL(record.status().ToString() << "; writer: " << written.ToString());
    }
    uint64_t index, sum;
    std::memcpy(&index, record->data(), 8);
    std::memcpy(&sum, record->data() + 8, 8);
    if (index != static_cast<uint64_t>(i) || sum != Checksum(record->subspan(16))) ++bad;
    REQUIRE(consumer.Release().ok());
  }
  writer.join();
  CHECK(written.ok());
  CHECK(bad == 0);
}

TEST_CASE("two-thread stress: every record arrives once, in order, intact") {
  SECTION("spinning") { StressRun(4096, 200000, kDefaultSpinIterations, 300); }
  SECTION("sleeping on every wait (futex wake-ups)") { StressRun(1024, 20000, 0, 200); }
  // 2000 records of up to 32 KiB wrap the 64 KiB ring hundreds of times; more only lengthened
  // the test's own byte-by-byte pattern and checksum (over a minute under the sanitizers).
  SECTION("large records") { StressRun(1 << 16, 2000, 64, 1 << 15); }
}

// Ping-pong over two rings where every wait goes to sleep at once: a lost wake-up would leave
// one side asleep and fail the test by timeout instead of completing.
TEST_CASE("futex sleep/wake loses no wake-ups") {
  RingMemory there(256), back(256);
  constexpr int kRounds = 20000;
  absl::Status echoed;
  std::jthread echo([&] {
    RingConsumer in = there.Consumer();
    RingProducer out = back.Producer();
    for (int i = 0; i < kRounds && echoed.ok(); ++i) {
      auto record = in.Peek(Bounded(i % 3 == 0 ? 0 : 8));
      if (!record.ok()) {
        echoed = record.status();
        break;
      }
      std::vector<std::byte> copy(record->begin(), record->end());
      echoed = in.Release();
      if (echoed.ok()) echoed = out.Write(copy, Bounded(0));
    }
  });
  RingProducer out = there.Producer();
  RingConsumer in = back.Consumer();
  int mismatches = 0;
  for (int i = 0; i < kRounds; ++i) {
    const uint64_t value = static_cast<uint64_t>(i) * 3;
    REQUIRE(out.Write({reinterpret_cast<const std::byte*>(&value), 8}, Bounded(0)).ok());
    auto record = in.Peek(Bounded(i % 2 == 0 ? 0 : 8));
    if (!record.ok()) {
      echo.join();
      FAIL(record.status().ToString() << "; echo: " << echoed.ToString());
    }
    uint64_t got;
    std::memcpy(&got, record->data(), 8);
    if (got != value) ++mismatches;
    REQUIRE(in.Release().ok());
  }
  echo.join();
  CHECK(echoed.ok());
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace tally::ipc
