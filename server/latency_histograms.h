// The latency histograms the server keeps per priority class (ipc/latency_histograms.h): the
// dispatch thread adds to them, tally-ctl status reads them from the control thread, so every
// count is an atomic of its own (a reader may see a sample in its bucket before in the sum).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "common/client_priority.h"
#include "ipc/latency_histograms.h"
#include "scheduler/types.h"

namespace tally::server {

class LatencyHistogram {
 public:
  void Add(scheduler::Duration latency);
  ipc::LatencyHistogram Snapshot() const;

 private:
  std::array<std::atomic<uint64_t>, ipc::kLatencyBuckets> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

struct ClassLatencyHistograms {
  LatencyHistogram preemption;
  LatencyHistogram queue_delay;
  LatencyHistogram request_to_issue;
  ipc::ClassLatencies Snapshot() const;
};

// High from the level of `high` up, best-effort below (an unset priority included).
ipc::PriorityClass ClassOf(ClientPriority priority);

}  // namespace tally::server
