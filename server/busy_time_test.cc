// BusyTime with a fake clock: overlapping runs count once, idle gaps not at all, the interval
// under way counts up to the reader's time, and a reader's answers never go back.
#include "server/busy_time.h"

#include <catch2/catch.hpp>

namespace tally::server {
namespace {

scheduler::Time At(int64_t ns) { return scheduler::Time(ns); }

// A run alone on the device from `start` to `end`.
void Run(BusyTime& busy, int64_t start, int64_t end) {
  busy.Started(At(start));
  busy.Ended(At(end));
}

TEST_CASE("Busy time is the union of the runs' intervals") {
  BusyTime busy;
  CHECK(busy.TotalNs(At(100)) == 0);
  busy.Started(At(100));
  busy.Started(At(150));  // overlaps the first
  busy.Ended(At(200));
  CHECK(busy.TotalNs(At(250)) == 150);  // still running: up to the reader's time
  busy.Ended(At(300));
  CHECK(busy.TotalNs(At(1000)) == 200);  // idle since 300
  Run(busy, 1000, 1050);
  CHECK(busy.TotalNs(At(5000)) == 250);
}

TEST_CASE("A reader's answers never go back") {
  BusyTime busy;
  busy.Started(At(0));
  CHECK(busy.TotalNs(At(500)) == 500);  // a reader ahead of the end the dispatcher sees
  busy.Ended(At(400));
  CHECK(busy.TotalNs(At(600)) == 500);
  Run(busy, 700, 900);
  CHECK(busy.TotalNs(At(900)) == 600);
}

TEST_CASE("An end without a start is ignored") {
  BusyTime busy;
  busy.Ended(At(10));
  CHECK(busy.TotalNs(At(20)) == 0);
}

}  // namespace
}  // namespace tally::server
