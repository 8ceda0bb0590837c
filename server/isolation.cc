#include "server/isolation.h"

#include "absl/strings/str_format.h"

namespace tally::server {

absl::StatusOr<Isolation> ParseIsolation(std::string_view value) {
  for (const Isolation isolation : {Isolation::kNone, Isolation::kFenced, Isolation::kStrict}) {
    if (value == IsolationName(isolation)) return isolation;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--isolation wants none, fenced or strict, not '%s'", value));
}

absl::StatusOr<Unfenceable> ParseUnfenceable(std::string_view value) {
  for (const Unfenceable unfenceable : {Unfenceable::kRefuse, Unfenceable::kAlone}) {
    if (value == UnfenceableName(unfenceable)) return unfenceable;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--unfenceable wants refuse or alone, not '%s'", value));
}

}  // namespace tally::server
