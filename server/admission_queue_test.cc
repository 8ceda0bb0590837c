// The admission queue: immediate entry, waiting in line until memory is free, and refusals.
#include "server/admission_queue.h"

#include <catch2/catch.hpp>
#include <thread>

namespace tally::server {
namespace {

constexpr uint64_t kMiB = 1 << 20;

struct Peer {
  explicit Peer(std::atomic<uint64_t>* free_bytes) : free(free_bytes) {}
  std::atomic<uint64_t>* free;
  std::vector<std::string> told;
  std::atomic<bool> hung_up{false};

  AdmissionQueue::Waiter Asking(uint64_t bytes) {
    return {bytes, [this] { return free->load(); },
            [this](const std::string& why) { told.push_back(why); },
            [this] { return hung_up.load(); }};
  }
};

TEST_CASE("a client whose memory is free enters at once, told nothing") {
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> free{512 * kMiB};
  AdmissionQueue queue(absl::Seconds(5), stopping);
  Peer peer(&free);
  CHECK(queue.Await(peer.Asking(256 * kMiB), "S").empty());
  CHECK(peer.told.empty());
  CHECK(queue.waiting() == 0);
}

TEST_CASE("clients wait in line until their memory is free, first come first served") {
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> free{96 * kMiB};
  AdmissionQueue queue(absl::Seconds(30), stopping);
  Peer first(&free);
  Peer second(&free);
  std::string first_result = "-";
  std::string second_result = "-";
  std::thread a([&] { first_result = queue.Await(first.Asking(256 * kMiB), "S"); });
  while (queue.waiting() < 1) std::this_thread::yield();
  std::thread b([&] { second_result = queue.Await(second.Asking(64 * kMiB), "S"); });
  while (queue.waiting() < 2) std::this_thread::yield();
  // The second's 64 MiB are free, but the first is ahead of it.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(queue.waiting() == 2);
  free = 512 * kMiB;
  a.join();
  b.join();
  CHECK(first_result.empty());
  CHECK(second_result.empty());
  REQUIRE(first.told.size() == 1);
  CHECK(first.told[0] ==
        "waiting for 256 MiB of device memory on S (96 MiB free now, 0 job(s) ahead); up to 30 s");
  REQUIRE(second.told.size() == 1);
  CHECK(second.told[0].find("1 job(s) ahead") != std::string::npos);
}

TEST_CASE("a waiter is refused at the timeout, when it hangs up and when the server stops") {
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> free{0};
  Peer peer(&free);
  SECTION("timeout") {
    AdmissionQueue queue(absl::Milliseconds(50), stopping);
    CHECK(queue.Await(peer.Asking(kMiB), "S").find("--admission-timeout-ms") != std::string::npos);
  }
  SECTION("hung up") {
    AdmissionQueue queue(absl::Seconds(30), stopping);
    peer.hung_up = true;
    CHECK(queue.Await(peer.Asking(kMiB), "S") == "it hung up while waiting");
  }
  SECTION("stopping") {
    AdmissionQueue queue(absl::Seconds(30), stopping);
    stopping = true;
    CHECK(queue.Await(peer.Asking(kMiB), "S") == "the server is shutting down");
    CHECK(queue.waiting() == 0);
  }
}

}  // namespace
}  // namespace tally::server
