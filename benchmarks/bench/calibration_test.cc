// Live mode's service time: the median completion gap of each calibration run, the smallest of
// the runs, and a clear error when no run measured anything.
#include "benchmarks/bench/calibration.h"

#include <catch2/catch.hpp>

namespace tally::bench {
namespace {

using std::chrono::microseconds;

TEST_CASE("A run's service time is its median gap between completions") {
  // Gaps 1000, 1200, 5000 (one request held up), 1100: the median by nearest rank, the lower
  // middle of four.
  const auto time = ServiceTime({{1000, 2000, 3200, 8200, 9300}});
  REQUIRE(time.ok());
  CHECK(*time == microseconds(1100));
}

TEST_CASE("Of several runs, the least disturbed sets the service time") {
  // Medians 1160, 3460 and 1920 us, as runs Q, R and S measured them one per run.
  const auto time =
      ServiceTime({{0, 3460, 6920, 10380}, {0, 1160, 2320, 3480}, {0, 1920, 3840, 5760}});
  REQUIRE(time.ok());
  CHECK(*time == microseconds(1160));
}

TEST_CASE("Runs that completed fewer than two requests are left out") {
  const auto time = ServiceTime({{}, {500}, {0, 2000, 4000}});
  REQUIRE(time.ok());
  CHECK(*time == microseconds(2000));
  const auto none = ServiceTime({{}, {700}});
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).find("none of 2 calibration runs") !=
        std::string::npos);
}

TEST_CASE("A service time is at least a microsecond") {
  const auto time = ServiceTime({{5, 5, 5}});
  REQUIRE(time.ok());
  CHECK(*time == microseconds(1));
}

}  // namespace
}  // namespace tally::bench
