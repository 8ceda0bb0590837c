// Clients' pod labels from the kubelet's pod-resources API (pod_labels.h).
#include "tools/tally_exporter/pod_labels.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/device_uuid.h"

namespace tally::tools {

PodLabels::PodLabels(const std::vector<kubelet::ContainerDevices>& containers) {
  for (const kubelet::ContainerDevices& container : containers) {
    if (!container.device_ids.empty()) {
      by_grant_.emplace(kubelet::GrantNameOf(container.device_ids), container);
    }
  }
}

std::string PodLabels::Of(std::string_view device_uuid, std::string_view grant) const {
  const auto found = by_grant_.find(grant);
  // A grant of the container's devices on another GPU's server is not this client's.
  const bool ours = found != by_grant_.end() && grant.starts_with(device_uuid) &&
                    grant.size() > device_uuid.size() && grant[device_uuid.size()] == '-';
  const kubelet::ContainerDevices none;
  const kubelet::ContainerDevices& container = ours ? found->second : none;
  return fmt::format("namespace={},pod={},container={}", LabelValue(container.pod_namespace),
                     LabelValue(container.pod), LabelValue(container.container));
}

std::string FormatMetricsWithPods(const std::vector<ServerStatus>& servers,
                                  const std::string& socket, std::string_view resource_prefix,
                                  absl::Duration timeout) {
  const auto containers = kubelet::ListContainerDevices(socket, resource_prefix, timeout);
  // Said once each time the kubelet stops answering, not at every scrape.
  static std::atomic<bool> answered{true};
  if (!containers.ok() && answered.exchange(false)) {
    std::fprintf(stderr, "tally-exporter: no pod labels until the kubelet answers again: %s\n",
                 std::string(containers.status().message()).c_str());
  }
  std::string out;
  if (containers.ok()) {
    answered = true;
    const PodLabels pods(*containers);
    out = FormatMetrics(servers, [&](const ipc::StatusReport& server, const ipc::ClientStatus& c) {
      return pods.Of(FormatDeviceUuid(ipc::DeviceUuidOf(server.server)),
                     std::string_view(c.grant, strnlen(c.grant, sizeof(c.grant))));
    });
  } else {
    out = FormatMetrics(servers);
  }
  return out + fmt::format(
                   "# HELP tally_exporter_pod_resources_up Whether the kubelet's pod-resources "
                   "API answered at this scrape (0: the clients' series carry no pod labels).\n"
                   "# TYPE tally_exporter_pod_resources_up gauge\n"
                   "tally_exporter_pod_resources_up {}\n",
                   containers.ok() ? 1 : 0);
}

}  // namespace tally::tools
