// A buggy or hostile peer writes whatever it likes into the shared segment: corrupted positions,
// record lengths, kinds, message headers, bulk refs and layouts must all give error Statuses,
// never an access outside the segment.
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>

#include "ipc/bulk.h"
#include "ipc/message.h"
#include "ipc/segment.h"
#include "ipc/spsc_ring.h"
#include "ipc/testing/example_messages.h"
#include "ipc/testing/ring_memory.h"

namespace tally::ipc {
namespace {

using testing::RingMemory;

void WriteRecordHeader(RingMemory& memory, uint64_t position, uint32_t size, uint32_t kind) {
  const RecordHeader header{size, kind};
  std::memcpy(memory.data() + (position & (memory.capacity() - 1)), &header, sizeof(header));
}

constexpr uint32_t kData = static_cast<uint32_t>(RecordKind::kData);
constexpr uint32_t kPadding = static_cast<uint32_t>(RecordKind::kPadding);

absl::Status PeekStatus(RingMemory& memory) { return memory.Consumer().TryPeek().status(); }

TEST_CASE("a consumer rejects corrupted producer positions") {
  RingMemory memory(256);
  SECTION("beyond the capacity") { memory.control().head = 512; }
  SECTION("unaligned") { memory.control().head = 12; }
  SECTION("behind the consumer") {
    RingConsumer consumer = memory.Consumer();
    RingProducer producer = memory.Producer();
    REQUIRE(producer.Write(std::vector<std::byte>(8), {}).ok());
    REQUIRE(consumer.TryPeek().ok());
    REQUIRE(consumer.Release().ok());
    memory.control().head = 0;
    CHECK(absl::IsDataLoss(consumer.TryPeek().status()));
    return;
  }
  const absl::Status status = PeekStatus(memory);
  CHECK(absl::IsDataLoss(status));
  CHECK_THAT(std::string(status.message()), Catch::Contains("producer position"));
}

TEST_CASE("a consumer rejects corrupted records") {
  RingMemory memory(256);
  memory.control().head = 64;
  SECTION("length beyond the published data") { WriteRecordHeader(memory, 0, 100, kData); }
  SECTION("length beyond the ring") { WriteRecordHeader(memory, 0, 0xffffffff, kData); }
  SECTION("unknown kind") { WriteRecordHeader(memory, 0, 8, 0x1234); }
  SECTION("padding that does not reach the end") { WriteRecordHeader(memory, 0, 16, kPadding); }
  SECTION("record crossing the end of the buffer") {
    // Consumer at 192 (via a legitimate padding-free history), record claims 100 bytes.
    RingConsumer consumer = memory.Consumer();
    RingProducer producer = memory.Producer();
    for (int i = 0; i < 6; ++i) {
      REQUIRE(producer.Write(std::vector<std::byte>(24), {}).ok());
      REQUIRE(consumer.TryPeek().ok());
      REQUIRE(consumer.Release().ok());
    }
    memory.control().head = 192 + 128;
    WriteRecordHeader(memory, 192, 100, kData);
    CHECK(absl::IsDataLoss(consumer.TryPeek().status()));
    return;
  }
  CHECK(absl::IsDataLoss(PeekStatus(memory)));
}

TEST_CASE("a corrupted ring stays unusable") {
  RingMemory memory(256);
  RingConsumer consumer = memory.Consumer();
  memory.control().head = 7;
  CHECK(absl::IsDataLoss(consumer.TryPeek().status()));
  memory.control().head = 0;  // the peer "repairing" it does not make us trust it again
  CHECK(absl::IsDataLoss(consumer.TryPeek().status()));
}

TEST_CASE("a producer rejects corrupted consumer positions") {
  RingMemory memory(256);
  RingProducer producer = memory.Producer();
  while (producer.TryReserve(24).ok()) REQUIRE(producer.Commit().ok());  // forces a tail read
  SECTION("ahead of the producer") { memory.control().tail = 1024; }
  SECTION("unaligned") { memory.control().tail = 3; }
  CHECK(absl::IsDataLoss(producer.TryReserve(24).status()));
}

// Random garbage in positions and record headers: whatever the consumer accepts lies inside the
// data area and within the published bytes.
TEST_CASE("random corruption never yields a record outside the ring") {
  RingMemory memory(512);
  std::mt19937_64 random(42);
  int accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    RingConsumer consumer = memory.Consumer();
    memory.control().head = random() % 2 == 0 ? random() % 1024 : (random() % 65) * 8;
    for (int i = 0; i < 8; ++i) {
      const uint64_t at = (random() % 64) * 8;
      const uint32_t kind = random() % 3 == 0 ? kPadding : random() % 2 == 0 ? kData : random();
      WriteRecordHeader(memory, at, static_cast<uint32_t>(random() % 600), kind);
    }
    auto record = consumer.TryPeek();
    if (!record.ok() || !record->has_value()) continue;
    ++accepted;
    const std::byte* begin = (*record)->data();
    CHECK(begin >= memory.data());
    CHECK(begin + (*record)->size() <= memory.data() + memory.capacity());
  }
  CHECK(accepted > 0);  // the generator does produce valid records too
}

TEST_CASE("truncated and inconsistent messages are rejected") {
  using testing::Ping;
  std::vector<std::byte> record(sizeof(MessageHeader) + sizeof(Ping));
  MessageHeader header{Ping::kType, 0, 1, sizeof(Ping), 0};
  std::memcpy(record.data(), &header, sizeof(header));

  CHECK(absl::IsInvalidArgument(
      ParseMessage(std::span(record).first(sizeof(MessageHeader) - 1)).status()));
  CHECK(absl::IsInvalidArgument(ParseMessage(std::span(record).first(record.size() - 1)).status()));

  header.payload_size = 1000;
  std::memcpy(record.data(), &header, sizeof(header));
  CHECK(absl::IsInvalidArgument(ParseMessage(record).status()));

  // A well-formed record whose payload is too short for the type it names.
  header = {Ping::kType, 0, 1, 4, 0};
  std::vector<std::byte> short_record(sizeof(MessageHeader) + 4);
  std::memcpy(short_record.data(), &header, sizeof(header));
  auto message = ParseMessage(short_record);
  REQUIRE(message.ok());
  CHECK(absl::IsInvalidArgument(Decode<Ping>(*message).status()));
  CHECK(absl::IsInvalidArgument(Decode<testing::Pong>(*message).status()));  // wrong type
}

TEST_CASE("bulk refs outside the area are rejected, also when sums would overflow") {
  std::vector<std::byte> bytes(4096);
  BulkArea area(bytes);
  CHECK(area.Resolve({0, 4096}).ok());
  CHECK(area.Resolve({4096, 0}).ok());
  CHECK(absl::IsOutOfRange(area.Resolve({1, 4096}).status()));
  CHECK(absl::IsOutOfRange(area.Resolve({4097, 0}).status()));
  CHECK(absl::IsOutOfRange(area.Resolve({8, UINT64_MAX}).status()));
  CHECK(absl::IsOutOfRange(area.Resolve({UINT64_MAX, 2}).status()));
}

TEST_CASE("malformed segment layouts are rejected") {
  auto good = ComputeLayout({});
  REQUIRE(good.ok());
  good->host_region_address = kHostRegionBase;  // the server's choice
  REQUIRE(ValidateLayout(*good).ok());
  SegmentLayout bad = *good;
  SECTION("ring capacity not a power of two") { bad.request_ring_capacity += 8; }
  SECTION("rings overlap") { bad.response_ring_offset = bad.request_ring_offset + 128; }
  SECTION("bulk area past the end") { bad.bulk_size = bad.segment_size; }
  SECTION("offset overflowing") { bad.bulk_offset = UINT64_MAX - 4095; }
  SECTION("header overwritten by a ring") { bad.request_ring_offset = 0; }
  SECTION("unaligned ring") { bad.response_ring_offset += 8; }
  SECTION("host region overlapping the bulk area") { bad.host_region_offset -= 4096; }
  SECTION("host region not ending the segment") { bad.segment_size += 4096; }
  SECTION("host region over the null page") { bad.host_region_address = 0; }
  SECTION("host region past the servers' range") {
    bad.host_region_address = kHostRegionLimit - 4096;
  }
  SECTION("host region address overflowing") { bad.host_region_address = UINT64_MAX - 4095; }
  CHECK(absl::IsInvalidArgument(ValidateLayout(bad)));
}

TEST_CASE("attaching checks the memfd's size and header against the handshake") {
  SegmentConfig config;
  config.bulk_size = 1 << 16;
  auto segment = Segment::Create(config);
  REQUIRE(segment.ok());
  const SegmentLayout layout = segment->layout();

  SECTION("wrong size") {
    SegmentLayout bigger = layout;
    bigger.segment_size += 4096;
    bigger.bulk_size += 4096;
    CHECK(absl::IsInvalidArgument(
        Segment::Attach(UniqueFd(dup(segment->fd().get())), bigger).status()));
  }
  SECTION("corrupted header") {
    segment->base()[0] = std::byte{0};
    CHECK(absl::IsInvalidArgument(
        Segment::Attach(UniqueFd(dup(segment->fd().get())), layout).status()));
  }
  SECTION("host region at the same address; taken in the server's own process") {
    auto region = segment->host_region();
    REQUIRE(region.ok());
    CHECK(reinterpret_cast<uint64_t>(region->data()) == layout.host_region_address);
    CHECK(layout.host_region_address >= kHostRegionBase);
    auto second = Segment::Create(config);
    REQUIRE(second.ok());
    CHECK(second->layout().host_region_address != layout.host_region_address);
    // A client in the same process finds the range in use: a clear error, nothing replaced.
    auto attached = Segment::Attach(UniqueFd(dup(segment->fd().get())), layout);
    REQUIRE(attached.ok());
    CHECK(absl::IsFailedPrecondition(attached->host_region().status()));
    (*region)[0] = std::byte{42};
    auto* other =
        static_cast<std::byte*>(mmap(nullptr, 4096, PROT_READ, MAP_SHARED, segment->fd().get(),
                                     static_cast<off_t>(layout.host_region_offset)));
    REQUIRE(other != MAP_FAILED);
    CHECK(other[0] == std::byte{42});  // the mapping is the memfd's host region part
    munmap(other, 4096);
  }
  SECTION("no free slot: the segment works without a host region") {
    // The whole range, but for the first segment's slot (a random one), which it already holds.
    const auto take = [](uint64_t from, uint64_t to) {
      if (from == to) return;
      void* taken = mmap(reinterpret_cast<void*>(from), to - from, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      REQUIRE(taken == reinterpret_cast<void*>(from));
    };
    const uint64_t slot_end = layout.host_region_address + layout.host_region_size;
    take(kHostRegionBase, layout.host_region_address);
    take(slot_end, kHostRegionLimit);
    auto crowded = Segment::Create(config);
    if (layout.host_region_address != kHostRegionBase) {
      munmap(reinterpret_cast<void*>(kHostRegionBase), layout.host_region_address - kHostRegionBase);
    }
    munmap(reinterpret_cast<void*>(slot_end), kHostRegionLimit - slot_end);
    REQUIRE(crowded.ok());
    CHECK(crowded->layout().host_region_size == 0);
    CHECK(absl::IsFailedPrecondition(crowded->host_region().status()));
    auto attached = Segment::Attach(UniqueFd(dup(crowded->fd().get())), crowded->layout());
    CHECK(attached.ok());
  }
  SECTION("host region pages mapped a second time share their memory") {
    auto region = segment->host_region();
    REQUIRE(region.ok());
    const uint64_t page = layout.host_region_address + 3 * 4096;
    void* at = mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(at != MAP_FAILED);
    std::memset(at, 7, 2 * 4096);
    REQUIRE(segment->MapHostRegionAlias(at, page, 2 * 4096, PROT_READ | PROT_WRITE).ok());
    auto* alias = static_cast<std::byte*>(at);
    auto* original = reinterpret_cast<std::byte*>(page);
    original[5] = std::byte{99};
    alias[4096 + 1] = std::byte{55};
    CHECK(alias[5] == std::byte{99});
    CHECK(original[4096 + 1] == std::byte{55});
    CHECK(alias[6] == std::byte{0});  // the region's contents, not what was there before
    // Outside the region, unaligned, or past its end: refused, nothing mapped.
    CHECK(absl::IsInvalidArgument(segment->MapHostRegionAlias(at, page + 1, 4096, PROT_READ)));
    CHECK(absl::IsInvalidArgument(
        segment->MapHostRegionAlias(at, kHostRegionBase - 4096, 4096, PROT_READ)));
    CHECK(absl::IsInvalidArgument(segment->MapHostRegionAlias(
        at, layout.host_region_address + layout.host_region_size - 4096, 2 * 4096, PROT_READ)));
    CHECK(absl::IsInvalidArgument(segment->MapHostRegionAlias(alias + 8, page, 4096, PROT_READ)));
    munmap(at, 2 * 4096);
  }
  SECTION("sealed: the client cannot shrink the server's mapping") {
    CHECK(ftruncate(segment->fd().get(), 4096) != 0);
    auto attached = Segment::Attach(UniqueFd(dup(segment->fd().get())), layout);
    CHECK(attached.ok());
  }
}

}  // namespace
}  // namespace tally::ipc
