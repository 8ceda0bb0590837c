// BusyTime's intervals and its lock-free reading (busy_time.h).
#include "server/busy_time.h"

#include <algorithm>

namespace tally::server {

void BusyTime::Started(scheduler::Time now) {
  if (running_++ > 0) return;
  sequence_.fetch_add(1);
  since_ns_.store(now.count());
  sequence_.fetch_add(1);
}

void BusyTime::Ended(scheduler::Time now) {
  if (running_ == 0 || --running_ > 0) return;
  sequence_.fetch_add(1);
  const int64_t since = since_ns_.load();
  closed_ns_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(now.count() - since, 0)));
  since_ns_.store(-1);
  sequence_.fetch_add(1);
}

scheduler::Time BusyTime::Now() {
  return std::chrono::duration_cast<scheduler::Time>(
      std::chrono::steady_clock::now().time_since_epoch());
}

uint64_t BusyTime::TotalNs(scheduler::Time now) const {
  uint64_t closed = 0;
  int64_t since = -1;
  // The writer's change is a few instructions: a reader retries only while one is under way.
  for (;;) {
    const uint64_t before = sequence_.load();
    if (before % 2 != 0) continue;
    closed = closed_ns_.load();
    since = since_ns_.load();
    if (sequence_.load() == before) break;
  }
  const uint64_t total =
      closed + (since < 0 ? 0 : static_cast<uint64_t>(std::max<int64_t>(now.count() - since, 0)));
  uint64_t answered = answered_ns_.load();
  while (total > answered && !answered_ns_.compare_exchange_weak(answered, total)) {
  }
  return std::max(total, answered);
}

}  // namespace tally::server
