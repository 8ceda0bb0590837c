// The scheduling policy interface: given the heads of the clients' non-empty command queues,
// decide whose command the device gets next. Pure: no clock, device or threads of its own, so
// the same policy runs in tally-server and in tests with fake inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace tally::scheduler {

// What a policy sees of one client queue.
struct QueueHead {
  uint64_t client_id = 0;
  int32_t priority = 0;  // higher is more important (TALLY_PRIORITY)
  uint64_t arrival = 0;  // server-wide enqueue order of the head command
  size_t depth = 0;      // commands queued, head included
};

class Policy {
 public:
  virtual ~Policy() = default;
  // An index into `queues` (every one non-empty), or nullopt to issue nothing now.
  virtual std::optional<size_t> PickNext(std::span<const QueueHead> queues) = 0;
};

// Commands in server-wide arrival order, whatever their client or priority.
std::unique_ptr<Policy> MakeFifoPolicy();

}  // namespace tally::scheduler
