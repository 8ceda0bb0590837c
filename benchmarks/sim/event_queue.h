// Virtual time for the simulator: callbacks ordered by time, and by scheduling order at equal
// times, so that every run of a scenario is the same.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "benchmarks/sim/device.h"

namespace tally::sim {

class EventQueue {
 public:
  // Runs `fn` at `time` (not before the current time).
  void At(Time time, std::function<void()> fn) {
    events_.push({std::max(time, now_), next_seq_++, std::move(fn)});
  }
  bool empty() const { return events_.empty(); }
  Time next_time() const { return events_.top().time; }
  Time now() const { return now_; }
  uint64_t processed() const { return processed_; }
  // Advances the clock to the earliest event and runs it.
  void RunNext() {
    Event event = events_.top();
    events_.pop();
    now_ = event.time;
    ++processed_;
    event.fn();
  }

 private:
  struct Event {
    Time time;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& other) const {
      return time != other.time ? time > other.time : seq > other.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  Time now_{0};
  uint64_t next_seq_ = 0;
  uint64_t processed_ = 0;
};

}  // namespace tally::sim
