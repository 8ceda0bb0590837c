// The gate of --unfenceable alone: a client is admitted only while no other holds memory, others
// may not hold memory while it is admitted (they wait, bounded), admissions nest, and a client's
// departure ends its hold and its admissions.
#include "server/unfenced_gate.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

namespace tally::server {
namespace {

using std::chrono::milliseconds;
const ClientId kA(1);
const ClientId kB(2);

TEST_CASE("an unfenced kernel is admitted only while no other client holds memory") {
  UnfencedGate gate(milliseconds(10));
  CHECK(gate.HoldMemory(kA));
  CHECK(gate.TryAdmit(kA));  // its own memory does not count
  gate.End(kA);
  CHECK(gate.HoldMemory(kB));
  CHECK_FALSE(gate.TryAdmit(kA));
  CHECK_FALSE(gate.TryAdmit(kB));
  gate.ClientLeft(kB);
  CHECK(gate.TryAdmit(kA));
}

TEST_CASE("while a client is admitted, another's memory waits, bounded, for its end") {
  UnfencedGate gate(milliseconds(20));
  REQUIRE(gate.TryAdmit(kA));
  gate.Extend(kA);  // a run on the device besides the queued kernel
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(gate.HoldMemory(kB));
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(20));
  CHECK(gate.TryAdmit(kA));  // B holds nothing after its refusal
  gate.End(kA);
  gate.End(kA);
  CHECK(gate.HoldMemory(kA));  // the admitted client's own memory never waits

  UnfencedGate patient(std::chrono::seconds(30));
  REQUIRE(patient.TryAdmit(kA));
  auto held = std::async(std::launch::async, [&] { return patient.HoldMemory(kB); });
  CHECK(held.wait_for(milliseconds(20)) == std::future_status::timeout);
  patient.End(kA);
  CHECK(held.get());
  CHECK_FALSE(patient.TryAdmit(kA));
}

TEST_CASE("a client that leaves ends its hold and every admission of its") {
  UnfencedGate gate(milliseconds(10));
  REQUIRE(gate.TryAdmit(kA));
  gate.Extend(kA);
  gate.ClientLeft(kA);
  CHECK(gate.HoldMemory(kB));
  gate.End(kA);  // a run that ends after its client left changes nothing
  CHECK(gate.HoldMemory(kB));
}

}  // namespace
}  // namespace tally::server
