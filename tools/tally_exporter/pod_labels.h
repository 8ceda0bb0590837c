// tally-exporter's pod labels (--pod-resources-socket): which pod's container each client of a
// server belongs to, by the grant it connected through. The device plugin names the grant of a
// container's devices GrantNameOf(its device IDs), and each ID begins with the device's UUID, so
// a client of grant G on the server of device U belongs to the container whose devices have
// grant name G, where G begins with U.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "tools/kubelet_api/pod_devices.h"
#include "tools/tally_ctl/metrics_format.h"

namespace tally::tools {

class PodLabels {
 public:
  explicit PodLabels(const std::vector<kubelet::ContainerDevices>& containers);

  // `namespace="…",pod="…",container="…"` for a client of grant `grant` (empty: the server's
  // own socket) on the server of the device `device_uuid` (as FormatDeviceUuid writes it); the
  // values are empty for a client of no container.
  std::string Of(std::string_view device_uuid, std::string_view grant) const;

 private:
  std::map<std::string, kubelet::ContainerDevices, std::less<>> by_grant_;
};

// The metrics of `servers` with the pod labels of their clients as the kubelet's pod-resources
// API at `socket` says (resources under `resource_prefix`, its answer awaited `timeout` at most),
// and tally_exporter_pod_resources_up saying whether it answered: without pod labels when not.
std::string FormatMetricsWithPods(const std::vector<ServerStatus>& servers,
                                  const std::string& socket, std::string_view resource_prefix,
                                  absl::Duration timeout);

}  // namespace tally::tools
