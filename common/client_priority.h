// A client's scheduling priority (TALLY_PRIORITY, tally-run --priority, tally-ctl priority):
// higher levels are more important. Not a CUDA stream priority, which orders a program's own
// streams and where lower numbers win.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally {

class ClientPriority {
 public:
  // The level of `best-effort`, and of a client that said nothing (Unset).
  static constexpr int32_t kBestEffortLevel = 0;
  // The level of `high`.
  static constexpr int32_t kHighLevel = 1;

  // The client gave no priority: it is scheduled as best-effort, and shown as unset.
  static constexpr ClientPriority Unset() { return ClientPriority(kBestEffortLevel, false); }
  static constexpr ClientPriority Level(int32_t level) { return ClientPriority(level, true); }
  static constexpr ClientPriority High() { return Level(kHighLevel); }
  static constexpr ClientPriority BestEffort() { return Level(kBestEffortLevel); }

  // "high", "best-effort" or a decimal integer (an empty text is Unset); anything else is
  // InvalidArgument with a message that says what is accepted.
  static absl::StatusOr<ClientPriority> Parse(std::string_view text);

  // The level the scheduler uses: an unset priority is best-effort.
  constexpr int32_t level() const { return level_; }
  constexpr bool is_set() const { return set_; }
  // "high", "best-effort", "7", or "unset (best-effort)".
  std::string ToString() const;

  // Ordered by level; an unset priority equals best-effort for scheduling, so comparisons
  // look at the level alone (use is_set() to tell them apart).
  friend constexpr bool operator==(ClientPriority a, ClientPriority b) {
    return a.level_ == b.level_;
  }
  friend constexpr auto operator<=>(ClientPriority a, ClientPriority b) {
    return a.level_ <=> b.level_;
  }

 private:
  constexpr ClientPriority(int32_t level, bool set) : level_(level), set_(set) {}
  int32_t level_;
  bool set_;
};

}  // namespace tally
