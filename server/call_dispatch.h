// Runs one request record from a client through its handler and encodes the response.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "server/session.h"

namespace tally::server {

// Handles the request in `record` (a ring record: MessageHeader + payload). Returns the encoded
// response record for a sync call (a CallError when the handler failed for a reason the client
// caused), nullopt for a one-way call. An error Status means the message itself was malformed
// (truncated, unknown type, wrong size): the caller ends the session.
absl::StatusOr<std::optional<std::vector<std::byte>>> HandleCall(Session& session,
                                                                 std::span<const std::byte> record);

}  // namespace tally::server
