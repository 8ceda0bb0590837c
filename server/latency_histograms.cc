// Per-class latency histograms (latency_histograms.h).
#include "server/latency_histograms.h"

#include <algorithm>

namespace tally::server {

void LatencyHistogram::Add(scheduler::Duration latency) {
  const uint64_t ns = static_cast<uint64_t>(std::max<int64_t>(latency.count(), 0));
  const auto* bound =
      std::lower_bound(std::begin(ipc::kLatencyBoundsNs), std::end(ipc::kLatencyBoundsNs), ns);
  counts_[bound - std::begin(ipc::kLatencyBoundsNs)].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

ipc::LatencyHistogram LatencyHistogram::Snapshot() const {
  ipc::LatencyHistogram out{};
  for (size_t i = 0; i < counts_.size(); ++i) {
    out.counts[i] = counts_[i].load(std::memory_order_relaxed);
  }
  out.sum_ns = sum_ns_.load(std::memory_order_relaxed);
  return out;
}

ipc::ClassLatencies ClassLatencyHistograms::Snapshot() const {
  return {preemption.Snapshot(), queue_delay.Snapshot(), request_to_issue.Snapshot()};
}

ipc::PriorityClass ClassOf(ClientPriority priority) {
  return priority >= ClientPriority::High() ? ipc::PriorityClass::kHigh
                                            : ipc::PriorityClass::kBestEffort;
}

}  // namespace tally::server
