// ClientPriority: parsing, the unset state, ordering and names.
#include "common/client_priority.h"

#include <catch2/catch.hpp>

namespace tally {
namespace {

TEST_CASE("Priorities parse from the names and integers users write") {
  CHECK(*ClientPriority::Parse("high") == ClientPriority::High());
  CHECK(ClientPriority::Parse("high")->is_set());
  CHECK(ClientPriority::Parse("best-effort")->level() == 0);
  CHECK(ClientPriority::Parse("-3")->level() == -3);
  CHECK(ClientPriority::Parse("12")->level() == 12);
  CHECK_FALSE(ClientPriority::Parse("")->is_set());
  for (const char* bad : {"urgent", "1.5", "7x", "99999999999"}) {
    INFO(bad);
    auto parsed = ClientPriority::Parse(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().find("high, best-effort or an integer") != std::string::npos);
  }
}

TEST_CASE("An unset priority schedules as best-effort but says it is unset") {
  const ClientPriority unset = ClientPriority::Unset();
  CHECK(unset == ClientPriority::BestEffort());
  CHECK_FALSE(unset.is_set());
  CHECK(unset.ToString() == "unset (best-effort)");
  CHECK(ClientPriority::BestEffort().ToString() == "best-effort");
  CHECK(ClientPriority::High().ToString() == "high");
  CHECK(ClientPriority::Level(5).ToString() == "5");
}

TEST_CASE("Higher levels are more important") {
  CHECK(ClientPriority::High() > ClientPriority::BestEffort());
  CHECK(ClientPriority::Level(5) > ClientPriority::High());
  CHECK(ClientPriority::Level(-1) < ClientPriority::Unset());
}

}  // namespace
}  // namespace tally
