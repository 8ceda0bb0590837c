// The bands of stream priorities: latency-critical clients above all others, each client's own
// order kept within its band, and devices with one or two priorities.
#include "server/stream_priority.h"

#include <catch2/catch.hpp>

namespace tally::server {
namespace {

// BackendStreamPriority on the numbers CUDA takes and answers.
int Backend(int requested, ClientPriority client, int least, int greatest) {
  return BackendStreamPriority(StreamPriority(requested), client, StreamPriority(least),
                               StreamPriority(greatest))
      .value();
}

TEST_CASE("Latency-critical clients get the more important half of the device's priorities") {
  // The range of an H100 and of the emulated GPU: 0 (least) .. -5 (greatest).
  const auto high = ClientPriority::High();
  const auto low = ClientPriority::BestEffort();
  CHECK(Backend(0, low, 0, -5) == 0);
  CHECK(Backend(-5, low, 0, -5) == -2);
  CHECK(Backend(0, high, 0, -5) == -3);
  CHECK(Backend(-5, high, 0, -5) == -5);
  CHECK(Backend(0, ClientPriority::Level(7), 0, -5) == -3);
  CHECK(Backend(0, ClientPriority::Unset(), 0, -5) == 0);
  // Every best-effort stream stays below every high-priority one, and each client's order holds.
  for (int a = -5; a <= 0; ++a) {
    CHECK(Backend(a, low, 0, -5) > Backend(0, high, 0, -5));
    for (int b = a; b <= 0; ++b) {
      CHECK(Backend(a, low, 0, -5) <= Backend(b, low, 0, -5));
      CHECK(Backend(a, high, 0, -5) <= Backend(b, high, 0, -5));
    }
  }
  // Out-of-range requests are clamped, as cuStreamCreateWithPriority does.
  CHECK(Backend(-9, high, 0, -5) == -5);
  CHECK(Backend(4, low, 0, -5) == 0);
}

TEST_CASE("Devices with one or two stream priorities") {
  CHECK(Backend(0, ClientPriority::High(), 0, 0) == 0);
  CHECK(Backend(0, ClientPriority::High(), 0, -1) == -1);
  CHECK(Backend(-1, ClientPriority::BestEffort(), 0, -1) == 0);
}

}  // namespace
}  // namespace tally::server
