// Strong ids: integers that name one kind of thing, so that a client id is never passed where
// another id (or a count) is expected.
#pragma once

#include <fmt/format.h>

#include <compare>
#include <cstdint>
#include <string>

namespace tally {

template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(uint64_t value) : value_(value) {}
  constexpr uint64_t value() const { return value_; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  template <typename H>
  friend H AbslHashValue(H state, StrongId id) {
    return H::combine(std::move(state), id.value_);
  }

 private:
  uint64_t value_ = 0;
};

// The server's name for a connected client (ipc HelloReply::client_id, tally-ctl, logs).
using ClientId = StrongId<struct ClientIdTag>;

// A kernel's identity across processes and restarts: its module's content hash combined with its
// name (the profiler's key, tally-ctl profiles).
using KernelId = StrongId<struct KernelIdTag>;

}  // namespace tally

// Logs and tally-ctl print an id as its number.
template <typename Tag>
struct fmt::formatter<tally::StrongId<Tag>> : fmt::formatter<uint64_t> {
  template <typename Context>
  auto format(tally::StrongId<Tag> id, Context& context) const {
    return fmt::formatter<uint64_t>::format(id.value(), context);
  }
};
