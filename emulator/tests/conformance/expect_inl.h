// Expect's comparison templates (included by conformance.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tally::emu::conformance {
namespace internal {

constexpr int kMaxReported = 8;  // mismatches listed per expectation

template <typename T>
std::string Show(T value) {
  std::ostringstream text;
  if constexpr (std::is_floating_point_v<T>) {
    text.precision(std::is_same_v<T, float> ? 9 : 17);
    text << value;
  } else if constexpr (sizeof(T) == 1) {
    text << static_cast<int>(value);
  } else {
    text << value;
  }
  return text.str();
}

// Bit-exact, except that any NaN matches any NaN: PTX produces the canonical NaN 0x7fffffff
// where x86 produces 0xffc00000, and the payload is not specified by IEEE 754.
template <typename T>
bool SameBits(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Compares element by element with `same(index, expected, actual)`; appends the first
// mismatches to `errors`.
template <typename T, typename Same>
void CompareEach(size_t arg, const std::vector<T>& expected, const std::vector<T>& actual,
                 Same same, std::string& errors) {
  if (actual.size() != expected.size()) {
    errors += "arg " + std::to_string(arg) + ": " + std::to_string(actual.size()) +
              " elements, expected " + std::to_string(expected.size()) + "\n";
    return;
  }
  size_t mismatches = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (same(i, expected[i], actual[i])) continue;
    if (mismatches++ < kMaxReported) {
      errors += "arg " + std::to_string(arg) + "[" + std::to_string(i) + "] = " + Show(actual[i]) +
                ", expected " + Show(expected[i]) + "\n";
    }
  }
  if (mismatches > kMaxReported) {
    errors += "arg " + std::to_string(arg) + ": " + std::to_string(mismatches) + " mismatches\n";
  }
}

template <typename T>
bool Within(T want, T got, double rel, double abs) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  double bound = std::max(abs, rel * std::fabs(static_cast<double>(want)));
  return std::fabs(static_cast<double>(want) - static_cast<double>(got)) <= bound;
}

}  // namespace internal

template <typename T>
void Expect::Equal(size_t arg, std::vector<T> expected) {
  checkers_.push_back([arg, expected = std::move(expected)](const Outputs& out, std::string& e) {
    auto same = [](size_t, T want, T got) { return internal::SameBits(want, got); };
    internal::CompareEach(arg, expected, out.args.Get<T>(arg), same, e);
  });
}

template <typename T>
void Expect::NearColumns(size_t arg, std::vector<T> expected,
                         std::vector<std::pair<double, double>> bounds) {
  static_assert(std::is_floating_point_v<T>);
  checkers_.push_back([arg, expected = std::move(expected), bounds = std::move(bounds)](
                          const Outputs& out, std::string& e) {
    auto near = [&bounds](size_t i, T want, T got) {
      auto [rel, abs] = bounds[i % bounds.size()];
      return internal::Within(want, got, rel, abs);
    };
    internal::CompareEach(arg, expected, out.args.Get<T>(arg), near, e);
  });
}

template <typename T>
void Expect::Near(size_t arg, std::vector<T> expected, double rel, double abs) {
  NearColumns(arg, std::move(expected), {{rel, abs}});
}

template <typename T>
void Expect::SameElements(size_t arg, std::vector<T> expected) {
  std::sort(expected.begin(), expected.end());
  checkers_.push_back([arg, expected = std::move(expected)](const Outputs& out, std::string& e) {
    std::vector<T> actual = out.args.Get<T>(arg);
    std::sort(actual.begin(), actual.end());
    auto same = [](size_t, T want, T got) { return internal::SameBits(want, got); };
    internal::CompareEach(arg, expected, actual, same, e);
  });
}

}  // namespace tally::emu::conformance
