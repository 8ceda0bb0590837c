// GetPreferredAllocation's choice (preferred_allocation.h).
#include "tools/tally_device_plugin/preferred_allocation.h"

#include <algorithm>
#include <tuple>

#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {
namespace {

// Available replicas by GPU, each list in replica order; IDs that are not ours are left out.
std::map<std::string, std::vector<ReplicaId>> ByGpu(const std::vector<std::string>& ids) {
  std::map<std::string, std::vector<ReplicaId>> by_gpu;
  for (const std::string& text : ids) {
    auto id = ParseReplicaId(text);
    if (id.ok()) by_gpu[id->gpu_uuid].push_back(*id);
  }
  for (auto& [gpu, replicas] : by_gpu) {
    std::sort(replicas.begin(), replicas.end(),
              [](const ReplicaId& a, const ReplicaId& b) { return a.index < b.index; });
  }
  return by_gpu;
}

std::string ChooseGpu(const std::map<std::string, std::vector<ReplicaId>>& by_gpu, size_t size,
                      const std::map<std::string, int>& high_clients) {
  const auto high = [&](const std::string& gpu) {
    const auto it = high_clients.find(gpu);
    return it == high_clients.end() ? 0 : it->second;
  };
  // Smaller is better: does not fit, high-priority clients, fewer available; the map's order
  // (the UUID) breaks ties.
  const auto rank = [&](const auto& entry) {
    const size_t available = entry.second.size();
    const bool fits = available >= size;
    return std::make_tuple(!fits, fits ? high(entry.first) : 0, -static_cast<long>(available));
  };
  const auto best =
      std::min_element(by_gpu.begin(), by_gpu.end(),
                       [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return best == by_gpu.end() ? std::string() : best->first;
}

}  // namespace

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include, int size,
                                             const std::map<std::string, int>& high_clients) {
  std::vector<std::string> chosen(must_include.begin(), must_include.end());
  if (size <= 0 || chosen.size() >= static_cast<size_t>(size)) return chosen;
  const std::map<std::string, std::vector<ReplicaId>> by_gpu = ByGpu(available);
  std::string gpu;
  if (!must_include.empty()) {
    if (auto id = ParseReplicaId(must_include.front()); id.ok()) gpu = id->gpu_uuid;
  } else {
    gpu = ChooseGpu(by_gpu, static_cast<size_t>(size), high_clients);
  }
  const auto replicas = by_gpu.find(gpu);
  if (replicas == by_gpu.end()) return chosen;
  for (const ReplicaId& id : replicas->second) {
    if (chosen.size() >= static_cast<size_t>(size)) break;
    const std::string text = FormatReplicaId(id);
    if (std::find(chosen.begin(), chosen.end(), text) == chosen.end()) chosen.push_back(text);
  }
  return chosen;
}

}  // namespace tally::device_plugin
