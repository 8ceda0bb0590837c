// Parsing and naming client priorities.
#include "common/client_priority.h"

#include <fmt/format.h>

#include <charconv>

namespace tally {

absl::StatusOr<ClientPriority> ClientPriority::Parse(std::string_view text) {
  if (text.empty()) return Unset();
  if (text == "high") return High();
  if (text == "best-effort") return BestEffort();
  int32_t level = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (error != std::errc() || end != text.data() + text.size()) {
    return absl::InvalidArgumentError(fmt::format(
        "a priority is high, best-effort or an integer (higher is more important), not '{}'",
        text));
  }
  return Level(level);
}

std::string ClientPriority::ToString() const {
  if (!set_) return "unset (best-effort)";
  if (level_ == kHighLevel) return "high";
  if (level_ == kBestEffortLevel) return "best-effort";
  return std::to_string(level_);
}

}  // namespace tally
