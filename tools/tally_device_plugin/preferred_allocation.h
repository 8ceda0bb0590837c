// GetPreferredAllocation's choice (pure): which replicas the kubelet should give a container.
//
// The rule: all of a container's replicas on one GPU (Allocate refuses anything else). When the
// kubelet requires some replicas (must_include), their GPU. Otherwise, among the GPUs with
// enough available replicas: for gpu-best-effort, the one whose high-priority work kept the
// device busy the smallest fraction of the last poll interval (in whole percents, so that a
// poll's noise does not outweigh what follows), so that best-effort work goes where
// latency-critical work leaves the most idle time; then, and first for gpu-high, the one with
// the fewest high-priority clients connected (the server's status: clients at level high or
// above), so that a gpu-high container shares its GPU with the fewest other latency-critical
// ones (their busy time so far says little of what a new one will need); then the most
// available replicas (the least used GPU); then the GPU's UUID. On that GPU, the required
// replicas and then the lowest numbered ones. When no GPU has enough, the GPU with the most
// available replicas (the kubelet completes the set, and Allocate says why it cannot be served).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {

// What a GPU's server reported of its high-priority load.
struct GpuLoad {
  int high_clients = 0;             // connected at level high or above
  double high_busy_fraction = 0.0;  // of the last poll interval, 0 to 1 (gpu_fleet.h)
};

// `loads`: per GPU UUID (a GPU missing counts as idle, without clients).
std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include, int size,
                                             ReplicaKind kind,
                                             const std::map<std::string, GpuLoad>& loads);

}  // namespace tally::device_plugin
