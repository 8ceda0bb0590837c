// The instruction names of the PTX ISA (through version 9.x); the parser rejects others so
// that a typo or an unsupported dialect is reported where it occurs.
#pragma once

#include <string_view>

namespace tally::ptx::internal {

bool IsKnownOpcode(std::string_view opcode);

}  // namespace tally::ptx::internal
