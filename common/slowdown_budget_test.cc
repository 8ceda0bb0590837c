// SlowdownBudget: the texts users write, the ranges, and the errors for everything else.
#include "common/slowdown_budget.h"

#include <catch2/catch.hpp>
#include <cmath>

namespace tally {
namespace {

TEST_CASE("Slowdown budgets parse as a percentage at p99 unless a percentile is given") {
  CHECK(*SlowdownBudget::Parse("10%") == SlowdownBudget{0.1, 0.99});
  CHECK(*SlowdownBudget::Parse("0%") == SlowdownBudget{0, 0.99});
  CHECK(*SlowdownBudget::Parse("12.5%@p95") == SlowdownBudget{0.125, 0.95});
  CHECK(SlowdownBudget::Parse("20%@p99.9")->percentile == Approx(0.999));
  CHECK(*SlowdownBudget::Parse("5%@p100") == SlowdownBudget{0.05, 1});
  CHECK(*SlowdownBudget::Parse("1000%") == SlowdownBudget{10, 0.99});
}

TEST_CASE("Budgets print as they parse") {
  CHECK(SlowdownBudget{0.15, 0.99}.ToString() == "15%@p99");
  CHECK(SlowdownBudget::Parse("7.5%@p50")->ToString() == "7.5%@p50");
}

TEST_CASE("Malformed budgets are refused with a message that says what is accepted") {
  for (const char* bad : {"", "10", "%", "ten%", "-5%", "+5%", "10%%", "10% ", "10%@", "10%@95",
                          "10%@p", "10%@pxx", "10%@p95@p99", "0x10%", "1e1%"}) {
    const auto parsed = SlowdownBudget::Parse(bad);
    INFO(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().find("10%@p95") != std::string_view::npos);
  }
}

TEST_CASE("Budgets outside their ranges are refused naming the range") {
  CHECK(SlowdownBudget::Parse("1001%").status().message().find("between 0% and 1000%") !=
        std::string_view::npos);
  CHECK(SlowdownBudget::Parse("10%@p0").status().message().find("percentile") !=
        std::string_view::npos);
  CHECK(SlowdownBudget::Parse("10%@p101").status().message().find("percentile") !=
        std::string_view::npos);
  CHECK_FALSE((SlowdownBudget{std::nan(""), 0.99}.Validate().ok()));
  CHECK_FALSE((SlowdownBudget{0.1, std::nan("")}.Validate().ok()));
  CHECK((SlowdownBudget{0.1, 0.5}.Validate().ok()));
}

}  // namespace
}  // namespace tally
