// tally-run --device: the server of a device, and --device auto's rule.
#include "tools/tally_run/server_choice.h"

#include <catch2/catch.hpp>

namespace tally::tools {
namespace {

constexpr uint64_t kMiB = 1 << 20;

ipc::ClientStatus Client(int32_t level) {
  ipc::ClientStatus client{};
  client.client_priority = ipc::WireClientPriority::From(ClientPriority::Level(level));
  return client;
}

ServerCandidate Server(int ordinal, uint64_t free_mib, std::vector<int32_t> client_levels = {}) {
  ServerCandidate server;
  server.socket = "/run/gpu" + std::to_string(ordinal) + ".sock";
  server.status.server = {};
  server.status.server.device_ordinal = ordinal;
  server.status.server.device_uuid[15] = static_cast<uint8_t>(ordinal);
  server.status.server.free_memory = free_mib * kMiB;
  server.status.server.max_clients = 64;
  for (int32_t level : client_levels) server.status.clients.push_back(Client(level));
  return server;
}

size_t Chosen(const std::vector<ServerCandidate>& servers, JobDemand job = {}) {
  absl::StatusOr<ServerChoice> choice = ChooseServer(servers, job);
  REQUIRE(choice.ok());
  return choice->index;
}

TEST_CASE("auto: the fewest clients at or above the job's priority first") {
  const JobDemand high{ClientPriority::High(), std::nullopt};
  // Two best-effort clients on the first count for a best-effort job, not for a high one.
  const std::vector<ServerCandidate> servers = {Server(0, 100, {0, 0}), Server(1, 900, {1})};
  CHECK(Chosen(servers) == 1);
  CHECK(Chosen(servers, high) == 0);
}

TEST_CASE("auto: then the most free memory, then the lowest ordinal") {
  CHECK(Chosen({Server(0, 100, {0}), Server(1, 200, {0})}) == 1);
  CHECK(Chosen({Server(1, 200), Server(0, 200)}) == 1);  // the one of ordinal 0
}

TEST_CASE("auto: servers without the job's memory free, draining or full are passed over") {
  std::vector<ServerCandidate> servers = {Server(0, 100), Server(1, 500, {0, 0, 0})};
  CHECK(Chosen(servers, {ClientPriority::Unset(), 256 * kMiB}) == 1);
  // When none has it free, the rule runs over all that accept clients.
  CHECK(Chosen(servers, {ClientPriority::Unset(), 1024 * kMiB}) == 0);
  servers[0].status.server.draining = 1;
  CHECK(Chosen(servers) == 1);
  servers[1].status.server.max_clients = 3;
  CHECK(absl::IsUnavailable(ChooseServer(servers, {}).status()));
}

TEST_CASE("a device by ordinal or UUID; a device no server serves is named with those served") {
  const std::vector<ServerCandidate> servers = {Server(0, 100), Server(1, 100)};
  CHECK(FindServerOfDevice(servers, {1, std::nullopt})->index == 1);
  DeviceUuid uuid{};
  uuid[15] = 1;
  CHECK(FindServerOfDevice(servers, {std::nullopt, uuid})->index == 1);
  const absl::StatusOr<ServerChoice> missing = FindServerOfDevice(servers, {2, std::nullopt});
  REQUIRE(absl::IsNotFound(missing.status()));
  CHECK(missing.status().message().find("/run/gpu1.sock (device 1, GPU-") != std::string::npos);
}

}  // namespace
}  // namespace tally::tools
