// A foreground client's slowdown budget (TALLY_SLOWDOWN_BUDGET, tally-run --slowdown-budget,
// tally-ctl budget, tally-server --slowdown-budget): how much longer than alone its kernels may
// take at a percentile of their runs because background work runs beside them
// (`priority-budget`, docs/scheduling.md).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally {

struct SlowdownBudget {
  double slowdown = 0;       // 0.1: 10% longer than alone; 0: nothing runs beside the client
  double percentile = 0.99;  // of the kernels' slowdowns, in (0, 1]

  // The largest budget accepted: 1000%.
  static constexpr double kMaxSlowdown = 10;

  // "10%" or "10%@p95" (p99 by default; "p100" is the largest slowdown, "p99.9" works too);
  // anything else is InvalidArgument with a message that says what is accepted.
  static absl::StatusOr<SlowdownBudget> Parse(std::string_view text);
  // OK when both numbers are within their ranges (what the server checks of what peers send).
  absl::Status Validate() const;
  // "10%@p99".
  std::string ToString() const;

  friend bool operator==(const SlowdownBudget&, const SlowdownBudget&) = default;
};

}  // namespace tally
