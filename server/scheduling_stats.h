// What the scheduler did for one client: kernels issued per form, preemptions, resumptions,
// time its kernels were held, measured preemption latency. Written by the dispatch thread,
// read by tally-ctl status and the log line when the client leaves.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace tally::server {

struct SchedulingStats {
  std::atomic<uint64_t> original{0};     // kernels in their original form
  std::atomic<uint64_t> sliced{0};       // kernels in their sliced form ...
  std::atomic<uint64_t> slices{0};       // ... in this many slices
  std::atomic<uint64_t> preemptible{0};  // kernels in their PTB form ...
  std::atomic<uint64_t> preempted{0};    // ... of which were stopped early at least once
  std::atomic<uint64_t> preemptions{0};  // raised preemption flags
  std::atomic<uint64_t> resumes{0};      // relaunches of stopped PTB kernels
  // Background kernels run in their original form without being known to be short.
  std::atomic<uint64_t> risky{0};
  // Kernels that had a transformed form the device could not give what the launch needs (more
  // shared memory or threads than it allows the form): they run in their original form.
  std::atomic<uint64_t> unfit{0};
  std::atomic<uint64_t> held_ns{0};  // time kernels waited at the queue head to be issued
  // From raising the flag to the end of the PTB kernel, measured with events on the device.
  std::atomic<uint64_t> preemption_latency_ns_total{0};
  std::atomic<uint64_t> preemption_latency_ns_max{0};
  std::atomic<uint64_t> preemption_latencies{0};
  // --unfenceable alone: kernels that could not be fenced, run alone on the device; refused after
  // waiting too long to; waiting now (0 or 1: the client's queue head).
  std::atomic<uint64_t> unfenced_alone{0};
  std::atomic<uint64_t> unfenced_refused{0};
  std::atomic<uint64_t> unfenced_waiting{0};

  uint64_t kernels() const { return original + sliced + preemptible; }
  void AddPreemptionLatency(uint64_t ns) {
    preemption_latency_ns_total += ns;
    ++preemption_latencies;
    uint64_t max = preemption_latency_ns_max.load();
    while (ns > max && !preemption_latency_ns_max.compare_exchange_weak(max, ns)) {
    }
  }
  // "3 original, 1 sliced (4 slices), 2 preemptible (1 preempted, 2 preemptions, 2 resumes)".
  std::string Format() const;
};

}  // namespace tally::server
