// GetPreferredAllocation's choice (preferred_allocation.h).
#include "tools/tally_device_plugin/preferred_allocation.h"

#include <algorithm>
#include <cmath>
#include <tuple>

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
                      ReplicaKind kind, const std::map<std::string, GpuLoad>& loads) {
  const auto load = [&](const std::string& gpu) {
    const auto it = loads.find(gpu);
    return it == loads.end() ? GpuLoad{} : it->second;
  };
  // Smaller is better: does not fit, busy percent (best-effort only), high-priority clients,
  // fewer available; the map's order (the UUID) breaks ties.
  const auto rank = [&](const auto& entry) {
    const size_t available = entry.second.size();
    const bool fits = available >= size;
    const GpuLoad gpu = fits ? load(entry.first) : GpuLoad{};
    const long busy_percent =
        kind == ReplicaKind::kBestEffort ? std::lround(gpu.high_busy_fraction * 100) : 0;
    return std::make_tuple(!fits, busy_percent, gpu.high_clients, -static_cast<long>(available));
  };
  const auto best =
      std::min_element(by_gpu.begin(), by_gpu.end(),
                       [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return best == by_gpu.end() ? std::string() : best->first;
}

}  // namespace

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include, int size,
                                             ReplicaKind kind,
                                             const std::map<std::string, GpuLoad>& loads) {
  std::vector<std::string> chosen(must_include.begin(), must_include.end());
  if (size <= 0 || chosen.size() >= static_cast<size_t>(size)) return chosen;
  const std::map<std::string, std::vector<ReplicaId>> by_gpu = ByGpu(available);
  std::string gpu;
  if (!must_include.empty()) {
    if (auto id = ParseReplicaId(must_include.front()); id.ok()) gpu = id->gpu_uuid;
  } else {
    gpu = ChooseGpu(by_gpu, static_cast<size_t>(size), kind, loads);
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
