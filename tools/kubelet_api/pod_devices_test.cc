// The kubelet's answer as containers' devices, and the grant name of a container's devices.
#include "tools/kubelet_api/pod_devices.h"

#include <catch2/catch.hpp>

#include "pod_resources.pb.h"

namespace tally::kubelet {
namespace {

// A container's entry of one resource in the kubelet's answer.
void AddDevices(v1::ContainerResources* container, const std::string& resource,
                std::vector<std::string> ids) {
  v1::ContainerDevices* devices = container->add_devices();
  devices->set_resource_name(resource);
  for (std::string& id : ids) devices->add_device_ids(std::move(id));
}

v1::ContainerResources* AddContainer(v1::ListPodResourcesResponse* response,
                                     const std::string& pod_namespace, const std::string& pod,
                                     const std::string& container) {
  v1::PodResources* entry = response->add_pod_resources();
  entry->set_namespace_(pod_namespace);
  entry->set_name(pod);
  v1::ContainerResources* resources = entry->add_containers();
  resources->set_name(container);
  return resources;
}

TEST_CASE("GrantNameOf is the smallest device ID as strings") {
  CHECK(GrantNameOf({"GPU-a-high-1", "GPU-a-high-0", "GPU-a-high-10"}) == "GPU-a-high-0");
  CHECK(GrantNameOf({"GPU-a-high-10", "GPU-a-high-9"}) == "GPU-a-high-10");  // not numeric
  CHECK(GrantNameOf({"GPU-b-best-effort-3"}) == "GPU-b-best-effort-3");
  CHECK(GrantNameOf({}).empty());
}

TEST_CASE("a resource prefix is a domain of lowercase letters, digits, '.' and '-'") {
  CHECK(CheckResourcePrefix("tally.dev").ok());
  CHECK(CheckResourcePrefix("gpu-share.example.com").ok());
  for (const char* bad : {"", "tally.dev/gpu-high", "Tally.dev", "tally dev", "tally_dev"}) {
    const absl::Status status = CheckResourcePrefix(bad);
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(status.message().find("a resource prefix is a domain") != std::string_view::npos);
  }
}

TEST_CASE("only resources under the prefix are kept, per container") {
  v1::ListPodResourcesResponse response;
  v1::ContainerResources* trainer = AddContainer(&response, "ml", "trainer-0", "main");
  AddDevices(trainer, "tally.dev/gpu-high", {"GPU-a-high-1", "GPU-a-high-0"});
  AddDevices(trainer, "nvidia.com/gpu", {"GPU-x"});
  AddDevices(trainer, "tally.devices/gpu-high", {"GPU-y"});  // a longer prefix, not ours
  AddDevices(trainer, "tally.dev", {"GPU-z"});               // the prefix alone is no resource
  AddDevices(AddContainer(&response, "web", "server", "side"), "other.dev/gpu", {"GPU-w"});
  const std::vector<ContainerDevices> devices = ContainerDevicesOf(response, "tally.dev");
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].pod_namespace == "ml");
  CHECK(devices[0].pod == "trainer-0");
  CHECK(devices[0].container == "main");
  CHECK(devices[0].resource == "tally.dev/gpu-high");
  CHECK(devices[0].device_ids == std::vector<std::string>{"GPU-a-high-0", "GPU-a-high-1"});
  CHECK(ContainerDevicesOf(response, "other.dev").at(0).container == "side");
  CHECK(ContainerDevicesOf(response, "absent.dev").empty());
}

TEST_CASE("a resource listed device by device is one entry; resources stay apart") {
  v1::ListPodResourcesResponse response;
  v1::ContainerResources* both = AddContainer(&response, "ml", "mixed", "main");
  AddDevices(both, "tally.dev/gpu-best-effort", {"GPU-a-best-effort-2"});
  AddDevices(both, "tally.dev/gpu-high", {"GPU-a-high-0"});
  AddDevices(both, "tally.dev/gpu-best-effort", {"GPU-a-best-effort-1"});
  // The kubelet lists a device once per NUMA node it is on.
  AddDevices(both, "tally.dev/gpu-best-effort", {"GPU-a-best-effort-1"});
  AddDevices(AddContainer(&response, "ml", "other", "main"), "tally.dev/gpu-high",
             {"GPU-a-high-1"});
  const std::vector<ContainerDevices> devices = ContainerDevicesOf(response, "tally.dev");
  REQUIRE(devices.size() == 3);
  CHECK(devices[0].resource == "tally.dev/gpu-best-effort");
  CHECK(devices[0].device_ids ==
        std::vector<std::string>{"GPU-a-best-effort-1", "GPU-a-best-effort-2"});
  CHECK(devices[1].resource == "tally.dev/gpu-high");
  CHECK(devices[1].device_ids == std::vector<std::string>{"GPU-a-high-0"});
  CHECK(devices[2].pod == "other");
  CHECK(devices[2].device_ids == std::vector<std::string>{"GPU-a-high-1"});
}

TEST_CASE("a socket nobody listens on is an error naming it, within the timeout") {
  const auto devices =
      ListContainerDevices("/nonexistent/kubelet.sock", "tally.dev", absl::Seconds(2));
  REQUIRE_FALSE(devices.ok());
  CHECK(devices.status().code() == absl::StatusCode::kUnavailable);
  CHECK(devices.status().message().find("/nonexistent/kubelet.sock") != std::string::npos);
}

}  // namespace
}  // namespace tally::kubelet
