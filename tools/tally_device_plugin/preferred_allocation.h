// GetPreferredAllocation's choice (pure): which replicas the kubelet should give a container.
//
// The rule: all of a container's replicas on one GPU (Allocate refuses anything else). When the
// kubelet requires some replicas (must_include), their GPU. Otherwise, among the GPUs with
// enough available replicas: the one with the fewest high-priority clients connected (the
// server's status: clients at level high or above), so that a best-effort container gets the
// GPU whose latency-critical work leaves it the most idle time and a gpu-high container shares
// its GPU with the fewest other latency-critical ones; then the most available replicas (the
// least used GPU); then the GPU's UUID. On that GPU, the required replicas and then the lowest
// numbered ones. When no GPU has enough, the GPU with the most available replicas (the
// kubelet completes the set, and Allocate says why it cannot be served).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tally::device_plugin {

// `high_clients`: per GPU UUID, its server's high-priority clients (a GPU missing counts 0).
std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include, int size,
                                             const std::map<std::string, int>& high_clients);

}  // namespace tally::device_plugin
