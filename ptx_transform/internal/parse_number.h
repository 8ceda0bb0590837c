// Conversion of PTX integer and floating-point constant spellings to their bit patterns
// (PTX ISA "Constants": decimal, 0x hex, 0 octal, 0b binary, U suffix; 0f/0d hex floats).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ptx_transform/ir.h"

namespace tally::ptx::internal {

struct ParsedInteger {
  uint64_t bits = 0;
  bool is_unsigned = false;
};
// nullopt when malformed or when the value does not fit in 64 bits.
std::optional<ParsedInteger> ParseInteger(std::string_view text);

struct ParsedFloat {
  Expr::FloatForm form = Expr::FloatForm::kHexF32;
  uint64_t bits = 0;  // f32 bits for kHexF32, f64 bits otherwise
};
std::optional<ParsedFloat> ParseFloat(std::string_view text);

}  // namespace tally::ptx::internal
