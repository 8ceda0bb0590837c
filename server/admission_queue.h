// tally-server --admission wait: a client that asks for more device memory (tally-run
// --memory-limit) than is free waits its turn instead of being admitted to fail its allocations.
// Waiters are admitted first come, first served: only the longest-waiting one may enter, once its
// memory is free; it is refused at the timeout, when it hangs up or when the server stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "absl/time/time.h"

namespace tally::server {

class AdmissionQueue {
 public:
  // What a waiter needs from the server and from its peer.
  struct Waiter {
    uint64_t bytes;                                // the memory it asks for
    std::function<uint64_t()> free_bytes;          // device memory free now
    std::function<void(const std::string&)> tell;  // says once what it waits for
    std::function<bool()> gone;                    // the peer hung up
  };

  AdmissionQueue(absl::Duration timeout, const std::atomic<bool>& stopping)
      : timeout_(timeout), stopping_(stopping) {}

  // Returns at once ("") when nobody waits and the memory is free; else waits (telling the
  // waiter once why) until it is first in line and its memory is free (""), or returns why not.
  // `place` names the server in what the waiter is told.
  std::string Await(const Waiter& waiter, const std::string& place);

  // Clients waiting now.
  size_t waiting() const;
  absl::Duration timeout() const { return timeout_; }

 private:
  // The waiter's reason to wait, or "" when it may enter now (under mutex_).
  std::string WhyWait(uint64_t ticket, const Waiter& waiter, const std::string& place) const;

  const absl::Duration timeout_;
  const std::atomic<bool>& stopping_;
  mutable std::mutex mutex_;
  std::deque<uint64_t> line_;  // tickets, the longest waiting first
  uint64_t next_ticket_ = 0;
};

}  // namespace tally::server
