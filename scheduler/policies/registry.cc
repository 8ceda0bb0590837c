// The policies a user can name, as one table: tally-server --policy, tally-bench and the
// simulator all find them here.
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scheduler/policy.h"

namespace tally::scheduler {
namespace {

using Factory = absl::StatusOr<std::unique_ptr<Policy>> (*)(const PolicyConfig&);

struct Entry {
  PolicyDescription description;
  Factory make;
};

absl::StatusOr<std::unique_ptr<Policy>> NeedsAdvisor(std::string_view name) {
  return absl::InvalidArgumentError(
      fmt::format("policy {} needs a form advisor (the profiler)", name));
}

constexpr std::array kPolicies = {
    Entry{
        {"priority", "Tally: higher-priority clients first; lower ones in idle time, preemptible"},
        [](const PolicyConfig& config) -> absl::StatusOr<std::unique_ptr<Policy>> {
          if (config.advisor == nullptr) return NeedsAdvisor("priority");
          return MakePriorityPolicy(config.priority, *config.advisor);
        }},
    Entry{{"priority-budget",
           "priority, but lower priorities may run beside the foreground within a slowdown "
           "budget",
           /*takes_budgets=*/true},
          [](const PolicyConfig& config) -> absl::StatusOr<std::unique_ptr<Policy>> {
            if (config.advisor == nullptr) return NeedsAdvisor("priority-budget");
            const BudgetOptions& budget = config.budget;
            if (!(budget.slowdown >= 0 && budget.slowdown <= 10)) {
              return absl::InvalidArgumentError(fmt::format(
                  "slowdown budget {} is not between 0 and 10 (1000%)", budget.slowdown));
            }
            if (!(budget.percentile > 0 && budget.percentile <= 1)) {
              return absl::InvalidArgumentError(
                  fmt::format("slowdown percentile {} is not in (0, 1]", budget.percentile));
            }
            return MakePriorityBudgetPolicy(config.priority, budget, *config.advisor);
          }},
    Entry{{"priority-no-transform",
           "lower priorities held until idle time, then run unmodified (not preemptible)"},
          [](const PolicyConfig& config) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakePriorityNoTransformPolicy(config.priority);
          }},
    Entry{{"fifo", "every kernel issued as it arrives; priorities are ignored"},
          [](const PolicyConfig&) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakeFifoPolicy();
          }},
    Entry{{"time-slice", "one client's work on the device at a time, round robin in slices"},
          [](const PolicyConfig& config) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakeTimeSlicePolicy(config.time_slice);
          }},
    Entry{{"mps", "everything concurrent, no priority (like NVIDIA MPS)"},
          [](const PolicyConfig&) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakeMpsPolicy(/*priority_streams=*/false);
          }},
    Entry{{"mps-priority",
           "everything concurrent; the most important clients on high-priority "
           "streams"},
          [](const PolicyConfig&) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakeMpsPolicy(/*priority_streams=*/true);
          }},
    Entry{{"tgs", "TGS (NSDI'23): lower priorities' launch rate adapted to the foreground's"},
          [](const PolicyConfig& config) -> absl::StatusOr<std::unique_ptr<Policy>> {
            return MakeTgsPolicy(config.tgs);
          }},
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                                   const PolicyConfig& config) {
  std::vector<std::string_view> names;
  for (const Entry& entry : kPolicies) {
    if (entry.description.name == name) return entry.make(config);
    names.push_back(entry.description.name);
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown policy '{}' (known: {})", name, fmt::join(names, ", ")));
}

bool TakesBudgets(std::string_view name) {
  for (const Entry& entry : kPolicies) {
    if (entry.description.name == name) return entry.description.takes_budgets;
  }
  return false;
}

std::span<const PolicyDescription> PolicyDescriptions() {
  static const auto descriptions = [] {
    std::array<PolicyDescription, kPolicies.size()> all{};
    for (size_t i = 0; i < kPolicies.size(); ++i) all[i] = kPolicies[i].description;
    return all;
  }();
  return descriptions;
}

}  // namespace tally::scheduler
