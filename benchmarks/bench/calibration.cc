// One request's service time from live calibration runs (calibration.h).
#include "benchmarks/bench/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "benchmarks/bench/report.h"

namespace tally::bench {

absl::StatusOr<sim::Duration> ServiceTime(const std::vector<std::vector<double>>& runs) {
  std::optional<double> smallest_us;
  for (const std::vector<double>& done_us : runs) {
    std::vector<double> gaps_us;
    for (size_t i = 1; i < done_us.size(); ++i) gaps_us.push_back(done_us[i] - done_us[i - 1]);
    if (gaps_us.empty()) continue;
    const double median_us = Percentile(gaps_us, 50);
    smallest_us = std::min(smallest_us.value_or(median_us), median_us);
  }
  if (!smallest_us) {
    return absl::InternalError(
        fmt::format("none of {} calibration runs completed two requests", runs.size()));
  }
  return std::chrono::duration_cast<sim::Duration>(
      std::chrono::duration<double, std::micro>(std::max(*smallest_us, 1.0)));
}

}  // namespace tally::bench
