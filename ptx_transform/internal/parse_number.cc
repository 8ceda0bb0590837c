// PTX constant spellings -> bits. Decimal floats are converted with std::from_chars (exact,
// round-to-nearest as in C), so printing the double back with full precision round-trips.
#include "ptx_transform/internal/parse_number.h"

#include <charconv>
#include <cstring>

namespace tally::ptx::internal {
namespace {

std::optional<uint64_t> ParseDigits(std::string_view digits, int base) {
  if (digits.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<ParsedInteger> ParseInteger(std::string_view text) {
  ParsedInteger result;
  if (!text.empty() && (text.back() == 'U' || text.back() == 'u')) {
    result.is_unsigned = true;
    text.remove_suffix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    text.remove_prefix(1);
  }
  auto value = ParseDigits(text, base);
  if (!value) return std::nullopt;
  result.bits = *value;
  return result;
}

std::optional<ParsedFloat> ParseFloat(std::string_view text) {
  ParsedFloat result;
  if (text.size() > 2 && text[0] == '0') {
    // 0fXXXXXXXX (8 hex digits of f32 bits) or 0dXXXXXXXXXXXXXXXX (16 of f64 bits).
    char prefix = static_cast<char>(text[1] | 0x20);  // lower case
    if (prefix == 'f' || prefix == 'd') {
      size_t digits = prefix == 'f' ? 8 : 16;
      auto bits = text.size() == digits + 2 ? ParseDigits(text.substr(2), 16) : std::nullopt;
      if (!bits) return std::nullopt;
      result.form = prefix == 'f' ? Expr::FloatForm::kHexF32 : Expr::FloatForm::kHexF64;
      result.bits = *bits;
      return result;
    }
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  result.form = Expr::FloatForm::kDecimal;
  std::memcpy(&result.bits, &value, sizeof value);
  return result;
}

}  // namespace tally::ptx::internal
