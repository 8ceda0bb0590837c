// tally-device-plugin's pure parts: replica IDs, the device list, the preferred allocation,
// the settings (flags and file), Allocate's plan and answer, which grants are orphaned.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tools/tally_device_plugin/container_allocation.h"
#include "tools/tally_device_plugin/container_grants.h"
#include "tools/tally_device_plugin/device_plugin_service.h"
#include "tools/tally_device_plugin/gpu_fleet.h"
#include "tools/tally_device_plugin/plugin_config.h"
#include "tools/tally_device_plugin/preferred_allocation.h"
#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {
namespace {

const std::string kGpuA = "GPU-00000000-1111-2222-3333-444444444444";
const std::string kGpuB = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

std::string High(const std::string& gpu, int n) {
  return FormatReplicaId({gpu, ReplicaKind::kHigh, n});
}
std::string BestEffort(const std::string& gpu, int n) {
  return FormatReplicaId({gpu, ReplicaKind::kBestEffort, n});
}

TEST_CASE("replica IDs: <uuid>-high-<n> and <uuid>-best-effort-<n>, parsed back") {
  CHECK(High(kGpuA, 0) == kGpuA + "-high-0");
  CHECK(BestEffort(kGpuA, 12) == kGpuA + "-best-effort-12");
  CHECK(BestEffort(kGpuA, 999).size() <= kMaxDeviceIdSize);
  const auto parsed = ParseReplicaId(kGpuB + "-best-effort-3");
  REQUIRE(parsed.ok());
  CHECK(*parsed == ReplicaId{kGpuB, ReplicaKind::kBestEffort, 3});
  for (const std::string& bad :
       std::vector<std::string>{kGpuA, kGpuA + "-high-", kGpuA + "-high-x", kGpuA + "-high--1",
                                kGpuA + "-low-1", "GPU-1234-high-0", "grant-1", "job1"}) {
    CAPTURE(bad);
    const auto status = ParseReplicaId(bad).status();
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(status.message()), Catch::Contains("not a Tally device ID"));
  }
}

TEST_CASE("the device list: every GPU's replicas of the resource, healthy as its server") {
  PluginConfig config;
  config.best_effort_replicas = 3;
  const std::vector<GpuState> gpus = {{kGpuA, "/a.sock", true}, {kGpuB, "/b.sock", false}};
  const auto list = DeviceList(gpus, config, ReplicaKind::kBestEffort);
  REQUIRE(list.devices_size() == 6);
  CHECK(list.devices(0).id() == BestEffort(kGpuA, 0));
  CHECK(list.devices(2).health() == "Healthy");
  CHECK(list.devices(3).id() == BestEffort(kGpuB, 0));
  CHECK(list.devices(5).health() == "Unhealthy");
  CHECK(DeviceList(gpus, config, ReplicaKind::kHigh).devices_size() == 4);
}

TEST_CASE("preferred allocation: one GPU, the fewest high-priority clients, then the freest") {
  const std::vector<std::string> available = {High(kGpuA, 0), High(kGpuA, 1), High(kGpuB, 1),
                                              High(kGpuB, 0), High(kGpuB, 2)};
  const auto prefer = [&](std::vector<std::string> must, int size,
                          const std::map<std::string, GpuLoad>& loads) {
    return PreferredAllocation(available, must, size, ReplicaKind::kHigh, loads);
  };
  SECTION("the GPU whose server has fewer high-priority clients") {
    CHECK(prefer({}, 2, {{kGpuA, {1}}, {kGpuB, {0}}}) ==
          std::vector<std::string>{High(kGpuB, 0), High(kGpuB, 1)});
    CHECK(prefer({}, 2, {{kGpuA, {0}}, {kGpuB, {3}}}) ==
          std::vector<std::string>{High(kGpuA, 0), High(kGpuA, 1)});
  }
  SECTION("for gpu-high, the clients count before the busy fraction") {
    CHECK(prefer({}, 2, {{kGpuA, {0, 0.9}}, {kGpuB, {1, 0.0}}}) ==
          std::vector<std::string>{High(kGpuA, 0), High(kGpuA, 1)});
  }
  SECTION("as loaded: the one with more replicas free") {
    CHECK(prefer({}, 1, {}) == std::vector<std::string>{High(kGpuB, 0)});
  }
  SECTION("only a GPU with enough replicas, whatever its load") {
    CHECK(prefer({}, 3, {{kGpuB, {5, 1.0}}}) ==
          std::vector<std::string>{High(kGpuB, 0), High(kGpuB, 1), High(kGpuB, 2)});
  }
  SECTION("the GPU of the replicas the kubelet requires") {
    CHECK(prefer({High(kGpuA, 1)}, 2, {{kGpuA, {9, 1.0}}}) ==
          std::vector<std::string>{High(kGpuA, 1), High(kGpuA, 0)});
  }
  SECTION("none has enough: the most available, the kubelet completes it") {
    CHECK(prefer({}, 4, {}).size() == 3);
  }
}

TEST_CASE("preferred allocation for best-effort: the GPU its high-priority work leaves most idle") {
  const std::vector<std::string> available = {BestEffort(kGpuA, 0), BestEffort(kGpuA, 1),
                                              BestEffort(kGpuB, 0), BestEffort(kGpuB, 1),
                                              BestEffort(kGpuB, 2)};
  const auto prefer = [&](int size, const std::map<std::string, GpuLoad>& loads) {
    return PreferredAllocation(available, {}, size, ReplicaKind::kBestEffort, loads);
  };
  const std::vector<std::string> on_a = {BestEffort(kGpuA, 0), BestEffort(kGpuA, 1)};
  const std::vector<std::string> on_b = {BestEffort(kGpuB, 0), BestEffort(kGpuB, 1)};
  SECTION("the lower busy fraction, whatever the clients connected") {
    CHECK(prefer(2, {{kGpuA, {3, 0.10}}, {kGpuB, {1, 0.60}}}) == on_a);
    CHECK(prefer(2, {{kGpuA, {0, 0.30}}, {kGpuB, {2, 0.05}}}) == on_b);
  }
  SECTION("fractions equal in whole percents: as for gpu-high (clients, then free replicas)") {
    CHECK(prefer(2, {{kGpuA, {0, 0.201}}, {kGpuB, {1, 0.199}}}) == on_a);
    CHECK(prefer(2, {{kGpuA, {0, 0.0}}, {kGpuB, {0, 0.004}}}) == on_b);  // more free on B
  }
  SECTION("only a GPU with enough replicas, however busy") {
    CHECK(
        prefer(3, {{kGpuA, {0, 0.0}}, {kGpuB, {0, 1.0}}}) ==
        std::vector<std::string>{BestEffort(kGpuB, 0), BestEffort(kGpuB, 1), BestEffort(kGpuB, 2)});
  }
}

TEST_CASE("the busy fraction between two answers of a server") {
  GpuState before{kGpuA, "/a.sock", true};
  before.server_pid = 10;
  before.high_busy_ns = 1'000'000'000;
  before.answered_at = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  GpuState now = before;
  now.answered_at += std::chrono::seconds(2);
  now.high_busy_ns += 500'000'000;
  CHECK(BusyFraction(before, now) == Approx(0.25));
  now.high_busy_ns = before.high_busy_ns + 3'000'000'000;  // past the interval: at most all
  CHECK(BusyFraction(before, now) == 1.0);
  now.high_busy_ns = 10;  // a server started anew
  CHECK(BusyFraction(before, now) == 0.0);
  now = before;
  now.server_pid = 11;
  now.high_busy_ns += 1'000'000'000;
  now.answered_at += std::chrono::seconds(2);
  CHECK(BusyFraction(before, now) == 0.0);
  CHECK(BusyFraction(before, before) == 0.0);  // no time between
}

TEST_CASE("settings: defaults, the file, flags over the file, clear errors") {
  const PluginConfig defaults;
  CHECK(defaults.ResourceName(ReplicaKind::kHigh) == "tally.dev/gpu-high");
  CHECK(defaults.ResourceName(ReplicaKind::kBestEffort) == "tally.dev/gpu-best-effort");
  CHECK(defaults.ReplicaMemory(ReplicaKind::kBestEffort, 16ull << 30) == 4ull << 30);

  PluginConfig config;
  REQUIRE(ApplyConfigEntries("p.env",
                             {{1, "TALLY_PLUGIN_RESOURCE_PREFIX", "example.com"},
                              {2, "TALLY_PLUGIN_HIGH_REPLICAS", "3"},
                              {3, "TALLY_PLUGIN_HIGH_MEMORY", "1.5G"},
                              {4, "TALLY_PLUGIN_PRELOAD", "ld-so-preload"},
                              {5, "TALLY_PLUGIN_RUN_DIR", "/srv/tally"}},
                             config)
              .ok());
  CHECK(config.ResourceName(ReplicaKind::kHigh) == "example.com/gpu-high");
  CHECK(config.ReplicaMemory(ReplicaKind::kHigh, 16ull << 30) == 3ull << 29);
  CHECK(config.preload == PreloadMode::kLdSoPreload);
  CHECK(config.run_dir == "/srv/tally");

  const auto error = [](const std::string& name, const std::string& value) {
    PluginConfig ignored;
    return std::string(ApplyConfigEntries("p.env", {{7, name, value}}, ignored).message());
  };
  CHECK_THAT(error("TALLY_PLUGIN_HIGH_REPLICAS", "0"),
             Catch::Contains("p.env:7") && Catch::Contains("from 1 to 1000"));
  CHECK_THAT(error("TALLY_PLUGIN_BEST_EFFORT_MEMORY", "lots"), Catch::Contains("size of memory"));
  CHECK_THAT(error("TALLY_PLUGIN_PRELOAD", "always"), Catch::Contains("env or ld-so-preload"));
  CHECK_THAT(error("TALLY_PLUGIN_KUBELET_DIR", "relative"), Catch::Contains("absolute path"));
  CHECK_THAT(error("TALLY_PLUGIN_RESOURCE_PREFIX", "Tally/x"), Catch::Contains("a domain"));
  CHECK_THAT(error("TALLY_PLUGIN_POLL_INTERVAL", "0"), Catch::Contains("seconds"));
  CHECK_THAT(error("TALLY_MAX_CLIENTS", "3"), Catch::Contains("not a setting"));
}

TEST_CASE("the command line: a flag overrides the configuration file") {
  const std::string path = "/tmp/tally-device-plugin-test-" + std::to_string(getpid()) + ".env";
  {
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    std::fputs("# replicas\nTALLY_PLUGIN_HIGH_REPLICAS=5\nTALLY_PLUGIN_BEST_EFFORT_REPLICAS=6\n",
               file);
    std::fclose(file);
  }
  CommandLine command_line;
  command_line.app().parse("--config " + path + " --high-replicas 7 --install-dir /usr/tally",
                           false);
  const auto config = command_line.Resolve();
  std::remove(path.c_str());
  REQUIRE(config.ok());
  CHECK(config->high_replicas == 7);
  CHECK(config->best_effort_replicas == 6);
  CHECK(config->install_dir == "/usr/tally");

  CommandLine bad;
  bad.app().parse("--preload sometimes", false);
  CHECK_THAT(std::string(bad.Resolve().status().message()),
             Catch::Contains("--preload") && Catch::Contains("env or ld-so-preload"));
}

TEST_CASE("Allocate's plan: one GPU, one resource, the grant named by the smallest ID") {
  const auto plan =
      PlanContainer({High(kGpuA, 1), High(kGpuA, 0), High(kGpuA, 10)}, ReplicaKind::kHigh);
  REQUIRE(plan.ok());
  CHECK(plan->gpu_uuid == kGpuA);
  CHECK(plan->grant_name == High(kGpuA, 0));
  CHECK(plan->replicas == 3);
  // Sorted as strings: -10 before -2.
  CHECK(PlanContainer({High(kGpuA, 2), High(kGpuA, 10)}, ReplicaKind::kHigh)->grant_name ==
        High(kGpuA, 10));

  CHECK_THAT(
      std::string(
          PlanContainer({High(kGpuA, 0), High(kGpuB, 0)}, ReplicaKind::kHigh).status().message()),
      Catch::Contains("on two GPUs") && Catch::Contains(kGpuB));
  CHECK_THAT(
      std::string(PlanContainer({BestEffort(kGpuA, 0)}, ReplicaKind::kHigh).status().message()),
      Catch::Contains("not one of gpu-high"));
  CHECK_FALSE(PlanContainer({}, ReplicaKind::kHigh).ok());
  CHECK_FALSE(PlanContainer({"nvidia0"}, ReplicaKind::kHigh).ok());
}

TEST_CASE("Allocate's answer: the grant and the installation mounted read-only, the shim's env") {
  PluginConfig config;
  config.install_dir = "/usr/local/tally";
  config.kubelet_dir = "/k";
  const std::string library = ContainerClientLibrary();
  CHECK(library.starts_with("/opt/tally/"));
  CHECK(library.ends_with("/libtally_client.so"));

  auto response = ContainerResponse(config, "/run/tally/GPU-x.grants/g", 991);
  REQUIRE(response.mounts_size() == 2);
  CHECK(response.mounts(0).container_path() == "/run/tally");
  CHECK(response.mounts(0).host_path() == "/run/tally/GPU-x.grants/g");
  CHECK(response.mounts(1).container_path() == "/opt/tally");
  CHECK(response.mounts(1).host_path() == "/usr/local/tally");
  CHECK(response.mounts(0).read_only());
  CHECK(response.mounts(1).read_only());
  CHECK(response.envs().at("TALLY_SERVER") == "/run/tally/server.sock");
  CHECK(response.envs().at("TALLY_SERVER_UID") == "991");
  CHECK(response.envs().at("LD_PRELOAD") == library);

  config.preload = PreloadMode::kLdSoPreload;
  response = ContainerResponse(config, "/g", 0);
  REQUIRE(response.mounts_size() == 3);
  CHECK(response.mounts(2).container_path() == "/etc/ld.so.preload");
  CHECK(response.mounts(2).host_path() == "/k/tally-ld.so.preload");
  CHECK(response.mounts(2).read_only());
  CHECK_FALSE(response.envs().contains("LD_PRELOAD"));
}

TEST_CASE("orphaned grants: ours, of this GPU, no live container's") {
  const auto grant = [](const std::string& name) {
    ipc::GrantStatus status{};
    std::strncpy(status.name, name.c_str(), sizeof(status.name) - 1);
    return status;
  };
  const std::vector<ipc::GrantStatus> grants = {grant(High(kGpuA, 0)), grant(High(kGpuA, 1)),
                                                grant(BestEffort(kGpuA, 2)), grant(High(kGpuB, 0)),
                                                grant("job1")};
  CHECK(OrphanedGrants(kGpuA, grants, {High(kGpuA, 1)}) ==
        std::vector<std::string>{High(kGpuA, 0), BestEffort(kGpuA, 2)});
  CHECK(OrphanedGrants(kGpuB, grants, {High(kGpuB, 0)}).empty());
}

}  // namespace
}  // namespace tally::device_plugin
