// The version of everything two processes must agree on to talk: handshake structs, segment
// layout, ring record format and message header. Bump it with any change to them; the message
// schema of the layers above has its own number (see Hello::schema_version).
#pragma once

#include <cstdint>

namespace tally::ipc {

inline constexpr uint32_t kProtocolVersion = 14;

}  // namespace tally::ipc
