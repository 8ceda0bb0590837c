// Parsing, checking and naming slowdown budgets.
#include "common/slowdown_budget.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace tally {
namespace {

constexpr std::string_view kAccepted =
    "a slowdown budget is a percentage, optionally at a percentile: 10%, 10%@p95";

// A whole decimal number (digits, at most one point), or nothing.
std::optional<double> Number(std::string_view text) {
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  double value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

absl::StatusOr<SlowdownBudget> SlowdownBudget::Parse(std::string_view text) {
  const size_t at = text.find('@');
  const std::string_view amount = text.substr(0, at);
  SlowdownBudget budget;
  if (amount.empty() || amount.back() != '%') {
    return absl::InvalidArgumentError(fmt::format("{}, not '{}'", kAccepted, text));
  }
  const std::optional<double> percent = Number(amount.substr(0, amount.size() - 1));
  if (!percent) return absl::InvalidArgumentError(fmt::format("{}, not '{}'", kAccepted, text));
  budget.slowdown = *percent / 100;
  if (at != std::string_view::npos) {
    const std::string_view rank = text.substr(at + 1);
    const std::optional<double> p =
        rank.size() > 1 && rank.front() == 'p' ? Number(rank.substr(1)) : std::nullopt;
    if (!p) {
      return absl::InvalidArgumentError(
          fmt::format("{}, not '{}' (a percentile is p50, p95, p99.9, ...)", kAccepted, text));
    }
    budget.percentile = *p / 100;
  }
  if (absl::Status valid = budget.Validate(); !valid.ok()) {
    return absl::InvalidArgumentError(fmt::format("'{}': {}", text, std::string(valid.message())));
  }
  return budget;
}

absl::Status SlowdownBudget::Validate() const {
  if (!(slowdown >= 0 && slowdown <= kMaxSlowdown)) {
    return absl::InvalidArgumentError(
        fmt::format("a slowdown budget is between 0% and {:g}%, not {:g}%", kMaxSlowdown * 100,
                    slowdown * 100));
  }
  if (!(percentile > 0 && percentile <= 1)) {
    return absl::InvalidArgumentError(fmt::format(
        "a budget's percentile is above p0 and at most p100, not p{:g}", percentile * 100));
  }
  return absl::OkStatus();
}

std::string SlowdownBudget::ToString() const {
  return fmt::format("{:g}%@p{:g}", slowdown * 100, percentile * 100);
}

}  // namespace tally
