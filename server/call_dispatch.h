// Runs one request record from a client through its handler and encodes the response.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "server/session.h"

namespace tally::server {

// Makes the encoded response of a kWait call; may block, so it runs on a waiter thread.
using LaterResponse = std::function<std::vector<std::byte>()>;
// What a request leads to: nothing (a one-way call), a response now, or one made later.
using Outcome = std::variant<std::monostate, std::vector<std::byte>, LaterResponse>;

// Handles the request in `record` (a ring record: MessageHeader + payload). A sync call's
// response is a CallError when the handler failed for a reason the client caused. An error
// Status means the message itself was malformed (truncated, unknown type, wrong size): the
// caller ends the session.
absl::StatusOr<Outcome> HandleCall(Session& session, std::span<const std::byte> record);

}  // namespace tally::server
