// The latency histograms a server keeps per priority class, as tally-ctl status carries them
// (StatusReply::latencies) and tally-ctl metrics renders them as Prometheus histograms: how
// long preempted kernels took to give the device back, how long kernels waited at the head of
// their client's queue, and how long launches took from the server's receipt to their issue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace tally::ipc {

// The buckets' upper bounds in nanoseconds (10 us to 1 s); one more bucket holds the rest.
inline constexpr uint64_t kLatencyBoundsNs[] = {10'000,     50'000,     100'000,     250'000,
                                                500'000,    1'000'000,  2'500'000,   5'000'000,
                                                10'000'000, 25'000'000, 100'000'000, 1'000'000'000};
inline constexpr size_t kLatencyBuckets = std::size(kLatencyBoundsNs) + 1;

struct LatencyHistogram {
  uint64_t counts[kLatencyBuckets];  // per bucket, not cumulative; the last: above every bound
  uint64_t sum_ns;
};

// A client's class: high (priority level high or above, latency-critical) or best-effort.
enum class PriorityClass : uint32_t { kBestEffort = 0, kHigh = 1 };
inline constexpr PriorityClass kPriorityClasses[] = {PriorityClass::kBestEffort,
                                                     PriorityClass::kHigh};
inline constexpr size_t kPriorityClassCount = std::size(kPriorityClasses);

// As metrics label it.
constexpr std::string_view PriorityClassName(PriorityClass c) {
  return c == PriorityClass::kHigh ? "high" : "best-effort";
}

struct ClassLatencies {
  LatencyHistogram preemption;        // flag raised to the PTB kernel's end (device events)
  LatencyHistogram queue_delay;       // at the head of the client's queue until issued
  LatencyHistogram request_to_issue;  // the server's receipt of the launch to its issue
};

}  // namespace tally::ipc
