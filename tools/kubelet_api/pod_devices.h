// Which devices of a resource family each container on the node holds, as the kubelet's
// pod-resources API (v1 List, pod_resources.proto) reports them; and the grant name the device
// plugin gives a container's devices (GrantNameOf). Used by tally-exporter (pod labels) and
// tally-device-plugin (grant clean-up).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace v1 {
class ListPodResourcesResponse;
}  // namespace v1

namespace tally::kubelet {

// The devices of one resource that one container holds.
struct ContainerDevices {
  std::string pod_namespace, pod, container, resource;
  std::vector<std::string> device_ids;  // sorted, each once
};

// Asks the kubelet's pod-resources socket (e.g. /var/lib/kubelet/pod-resources/kubelet.sock)
// which devices each container holds, and keeps those of resources under `resource_prefix`
// (`<prefix>/<name>`). Waits at most `timeout`; an error names the socket and what gRPC said
// (Unavailable when nobody answers there, DeadlineExceeded when the kubelet was too slow).
absl::StatusOr<std::vector<ContainerDevices>> ListContainerDevices(const std::string& socket_path,
                                                                   std::string_view resource_prefix,
                                                                   absl::Duration timeout);

// ListContainerDevices's conversion of the kubelet's answer: one entry per container and
// resource under the prefix, in the answer's order. The kubelet may list a container's devices
// of one resource in several entries (one per device and NUMA node): they are merged.
std::vector<ContainerDevices> ContainerDevicesOf(const v1::ListPodResourcesResponse& response,
                                                 std::string_view resource_prefix);

// Whether `prefix` can be the domain of our resources' names (PREFIX/gpu-high): lowercase
// letters, digits, '.' and '-'. InvalidArgument saying so otherwise. The device plugin and the
// exporter check their --resource-prefix with it, so that they agree on what they accept.
absl::Status CheckResourcePrefix(std::string_view prefix);

// The name of the grant that serves these devices: the smallest ID, sorted as strings (empty
// for no IDs). Both the device plugin and the exporter derive it, so neither stores it.
std::string GrantNameOf(std::vector<std::string> device_ids);

}  // namespace tally::kubelet
