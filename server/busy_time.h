// The time during which at least one run of a priority class was on the device: the dispatch
// thread tells when each run goes to the device and when it is seen to have ended (a clock read
// each, no lock), and any thread reads the total, the interval under way included. The total
// only grows: tally-ctl and tally-exporter give it as a counter, and the device plugin takes
// the difference between two polls for the class's busy fraction.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "scheduler/types.h"

namespace tally::server {

class BusyTime {
 public:
  // Dispatch thread only; every Started is followed by one Ended, with times that do not go back.
  void Started(scheduler::Time now);
  void Ended(scheduler::Time now);
  // Any thread: the busy nanoseconds up to `now`, never less than an earlier answer.
  uint64_t TotalNs(scheduler::Time now) const;
  // The steady clock, as the dispatcher reads it.
  static scheduler::Time Now();

 private:
  uint32_t running_ = 0;  // dispatch thread only
  // A seqlock: odd while the dispatch thread changes the two below.
  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> closed_ns_{0};  // busy intervals that ended
  std::atomic<int64_t> since_ns_{-1};   // the interval under way began (-1: none)
  // The largest answer given: a reader whose clock ran past the end the dispatch thread saw
  // (the end is seen at its poll) is not followed by a smaller answer.
  mutable std::atomic<uint64_t> answered_ns_{0};
};

}  // namespace tally::server
