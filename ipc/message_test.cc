// Message schema tests: posting and decoding through a ring, variable tails, the generated
// dispatch switch, and the bulk allocator moving payloads larger than a record.
#include "ipc/message.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "ipc/bulk.h"
#include "ipc/testing/example_messages.h"
#include "ipc/testing/ring_memory.h"

namespace tally::ipc {
namespace {

using testing::Blob;
using testing::BulkChecksum;
using testing::Checksum;
using testing::Ping;
using testing::Pong;
using testing::RingMemory;

absl::StatusOr<ReceivedMessage> Receive(RingConsumer& consumer) {
  auto record = consumer.TryPeek();
  if (!record.ok()) return record.status();
  if (!record->has_value()) return absl::NotFoundError("empty ring");
  return ParseMessage(**record);
}

TEST_CASE("messages round-trip through a ring and dispatch to their type") {
  RingMemory memory(4096);
  RingProducer producer = memory.Producer();
  RingConsumer consumer = memory.Consumer();
  std::vector<std::byte> tail(300);
  for (size_t i = 0; i < tail.size(); ++i) tail[i] = static_cast<std::byte>(i);

  REQUIRE(PostMessage(producer, 7, 0, Ping{42}, {}).ok());
  REQUIRE(PostMessage(producer, 8, kFlagOneWay, Blob{Checksum(tail)}, tail, {}).ok());

  std::vector<std::string> seen;
  auto visitor = [&](const MessageHeader& header, const auto& decoded) -> absl::Status {
    using T = std::decay_t<decltype(decoded.fields)>;
    if constexpr (std::is_same_v<T, Ping>) {
      seen.push_back("ping " + std::to_string(decoded.fields.value) + " seq " +
                     std::to_string(header.sequence));
    } else if constexpr (std::is_same_v<T, Blob>) {
      const bool intact = decoded.fields.checksum == Checksum(decoded.tail);
      seen.push_back("blob " + std::to_string(decoded.tail.size()) + (intact ? " ok" : " bad") +
                     ((header.flags & kFlagOneWay) != 0 ? " one-way" : ""));
    } else {
      seen.push_back("other");
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < 2; ++i) {
    auto message = Receive(consumer);
    REQUIRE(message.ok());
    REQUIRE(testing::DispatchExample(*message, visitor).ok());
    REQUIRE(consumer.Release().ok());
  }
  CHECK(seen == std::vector<std::string>{"ping 42 seq 7", "blob 300 ok one-way"});
}

TEST_CASE("dispatch rejects unknown types and payloads of the wrong size") {
  auto ignore = [](const MessageHeader&, const auto&) { return absl::OkStatus(); };
  MessageHeader header{99, 0, 1, 0, 0};
  CHECK(absl::IsInvalidArgument(testing::DispatchExample(ReceivedMessage{header, {}}, ignore)));
  header.type = 0;
  CHECK(absl::IsInvalidArgument(testing::DispatchExample(ReceivedMessage{header, {}}, ignore)));

  // Pong has no tail: one extra byte is an error, where Blob accepts any tail.
  std::vector<std::byte> payload(sizeof(Pong) + 1);
  header = {Pong::kType, 0, 1, static_cast<uint32_t>(payload.size()), 0};
  CHECK(
      absl::IsInvalidArgument(testing::DispatchExample(ReceivedMessage{header, payload}, ignore)));
  header.type = Blob::kType;
  CHECK(testing::DispatchExample(ReceivedMessage{header, payload}, ignore).ok());
}

TEST_CASE("the bulk allocator hands out disjoint blocks and reuses freed ones") {
  std::vector<std::byte> area(1 << 20);
  auto allocator = BulkAllocator::Create(area);
  REQUIRE(allocator.ok());
  BulkArea view(area);
  std::vector<BulkRef> blocks;
  for (int i = 0; i < 16; ++i) {
    auto block = (*allocator)->Allocate(40000);
    REQUIRE(block.ok());
    auto bytes = view.Resolve(*block);
    REQUIRE(bytes.ok());
    std::memset(bytes->data(), i, bytes->size());
    blocks.push_back(*block);
  }
  for (int i = 0; i < 16; ++i) {  // no block overwrote another
    auto bytes = (*allocator)->Bytes(blocks[i]);
    CHECK(std::all_of(bytes.begin(), bytes.end(), [&](std::byte b) { return b == std::byte(i); }));
  }
  CHECK(absl::IsResourceExhausted((*allocator)->Allocate(2 << 20).status()));
  const size_t free_before = (*allocator)->free_bytes();
  for (const BulkRef& block : blocks) (*allocator)->Free(block);
  CHECK((*allocator)->free_bytes() > free_before + 16 * 40000 - 1);
  CHECK((*allocator)->Allocate(600000).ok());
}

// The shim's host threads copy at once (tests/e2e/threads): without the allocator's lock its
// tree is corrupted, blocks overlap, and a thread loops or crashes inside Boost.
TEST_CASE("the bulk allocator serves many threads at once") {
  std::vector<std::byte> area(1 << 20);
  auto allocator = BulkAllocator::Create(area);
  REQUIRE(allocator.ok());
  const size_t free_at_start = (*allocator)->free_bytes();
  std::atomic<int> overwritten{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const auto mark = std::byte(t + 1);
      for (int i = 0; i < 20000; ++i) {
        auto block = (*allocator)->Allocate(64 + 16 * ((i * 7 + t) % 64));
        if (!block.ok()) continue;  // momentarily full: fine, as long as nothing overlaps
        auto bytes = (*allocator)->Bytes(*block);
        std::memset(bytes.data(), int(mark), bytes.size());
        std::this_thread::yield();
        if (!std::all_of(bytes.begin(), bytes.end(), [&](std::byte b) { return b == mark; })) {
          ++overwritten;
        }
        (*allocator)->Free(*block);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK(overwritten == 0);
  CHECK((*allocator)->free_bytes() == free_at_start);
}

}  // namespace
}  // namespace tally::ipc
