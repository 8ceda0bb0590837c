// Parsing and printing byte sizes with binary units.
#include "common/byte_size.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <string>

namespace tally {
namespace {

struct Unit {
  std::string_view name;
  int shift;  // a power of 1024, as a shift of 10 * shift
};

// Longest names first, so that "kib" is not read as "k" followed by "ib".
constexpr std::array<Unit, 13> kUnits = {{{"kib", 1}, {"mib", 2}, {"gib", 3}, {"tib", 4},
                                          {"kb", 1},  {"mb", 2},  {"gb", 3},  {"tb", 4},
                                          {"k", 1},   {"m", 2},   {"g", 3},   {"t", 4},
                                          {"b", 0}}};

absl::Status Invalid(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(fmt::format(
      "'{}' is not a size: {} (write bytes, or a number with K, M, G or T: 512M, 4G, 1.5GiB)",
      text, why));
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  std::string lower;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  size_t digits = 0;
  bool point = false;
  while (digits < lower.size() &&
         (std::isdigit(static_cast<unsigned char>(lower[digits])) ||
          (lower[digits] == '.' && !point))) {
    point = point || lower[digits] == '.';
    ++digits;
  }
  const std::string number = lower.substr(0, digits);
  if (number.empty() || number == ".") return Invalid(text, "no number");
  const std::string_view suffix = std::string_view(lower).substr(digits);
  int shift = 0;
  if (!suffix.empty()) {
    bool known = false;
    for (const Unit& unit : kUnits) {
      if (suffix == unit.name) {
        shift = unit.shift;
        known = true;
        break;
      }
    }
    if (!known) return Invalid(text, fmt::format("unknown unit '{}'", suffix));
  }
  const long double value = std::stold(number) * std::ldexp(1.0L, 10 * shift);
  if (!(value < std::ldexp(1.0L, 64))) return Invalid(text, "more than 2^64 bytes");
  return static_cast<uint64_t>(value);
}

std::string FormatByteSize(uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kNames = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit + 1 < static_cast<int>(kNames.size()) && bytes >> (10 * (unit + 1)) != 0) ++unit;
  if (unit == 0) return fmt::format("{} bytes", bytes);
  const double scaled = std::ldexp(static_cast<double>(bytes), -10 * unit);
  if (bytes % (uint64_t{1} << (10 * unit)) == 0) {
    return fmt::format("{:.0f} {}", scaled, kNames[unit]);
  }
  return fmt::format("{:.2f} {}", scaled, kNames[unit]);
}

}  // namespace tally
