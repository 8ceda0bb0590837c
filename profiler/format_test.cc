// The listings `tally-ctl profiles` prints: form and duration spellings, the text table and the
// JSON array.
#include "profiler/format.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <vector>

#include "profiler/testing/kernels.h"

namespace tally::profiler {
namespace {

using namespace testing;

std::vector<ProfileRecord> Records() {
  ProfileRecord done;
  done.shape = Kernel(0xabcdef0123456789, 100).shape;
  done.shape.shared_bytes = 4096;
  done.kernel_name = "gemm";
  done.original_time = Us(380);
  done.chosen = LaunchForm::Preemptible(16);
  done.short_turnaround = true;
  done.candidates = 6;
  done.measured = 6;
  done.complete = true;
  done.normalized_speed = 380.0 / 450.0;
  done.turnaround = Us(90);

  ProfileRecord profiling;
  profiling.shape = Kernel(2, 1000).shape;
  profiling.shape.grid = {10, 10, 10};
  profiling.chosen = LaunchForm::Preemptible();
  profiling.short_turnaround = true;
  profiling.candidates = 9;
  profiling.measured = 0;

  ProfileRecord long_original;
  long_original.shape = Kernel(3, 64, false, false).shape;
  long_original.kernel_name = "scan";
  long_original.original_time = std::chrono::milliseconds(12);
  long_original.complete = true;
  long_original.normalized_speed = 1;
  long_original.turnaround = std::chrono::milliseconds(12);
  return {done, profiling, long_original};
}

TEST_CASE("Forms are spelt kind:count") {
  CHECK(FormText(LaunchForm::Original()) == "original");
  CHECK(FormText(LaunchForm::Sliced(8)) == "sliced:8");
  CHECK(FormText(LaunchForm::Preemptible(64)) == "ptb:64");
  CHECK(FormText(LaunchForm::Preemptible()) == "ptb:full");
}

TEST_CASE("Durations are spelt in the unit that suits them") {
  CHECK(DurationText(std::chrono::nanoseconds(850)) == "850ns");
  CHECK(DurationText(std::chrono::nanoseconds(12'540)) == "12.5us");
  CHECK(DurationText(std::chrono::microseconds(3'250)) == "3.25ms");
  CHECK(DurationText(std::chrono::milliseconds(1'500)) == "1.50s");
}

TEST_CASE("The table: a header, one aligned line per record, '-' for what is unknown") {
  CHECK(FormatProfilesTable(Records()) ==
        "KERNEL  HASH              GRID      BLOCK    SMEM  FORM      ORIGINAL  SPEED  "
        "TURNAROUND  STATUS\n"
        "gemm    abcdef0123456789  100x1x1   128x1x1  4096  ptb:16    380.0us   0.84   "
        "90.0us      done\n"
        "?       0000000000000002  10x10x10  128x1x1  0     ptb:full  -         -      "
        "-           profiling 0/9\n"
        "scan    0000000000000003  64x1x1    128x1x1  0     original  12.00ms   1.00   "
        "12.00ms     long\n");
  CHECK(FormatProfilesTable({}) ==
        "KERNEL  HASH  GRID  BLOCK  SMEM  FORM  ORIGINAL  SPEED  TURNAROUND  STATUS\n");
}

TEST_CASE("The status of a kernel without transformed forms") {
  ProfileRecord record;
  record.shape = Kernel(3, 64, false, false).shape;
  record.kernel_name = "k";
  const auto status = [&] {
    const std::string table = FormatProfilesTable(std::span(&record, 1));
    return table.substr(table.rfind("  ") + 2);
  };
  CHECK(status() == "unmeasured\n");
  record.original_time = Us(20);
  record.short_turnaround = true;
  CHECK(status() == "short\n");
}

TEST_CASE("The JSON listing: one object per record, null for what is unknown") {
  const std::string text = FormatProfilesJson(Records());
  CHECK(std::count(text.begin(), text.end(), '\n') == 5);  // brackets and one line per record
  const nlohmann::json list = nlohmann::json::parse(text);
  REQUIRE(list.size() == 3);
  CHECK(list[0] == nlohmann::json::parse(R"({
    "kernel": "0xabcdef0123456789", "name": "gemm", "grid": [100, 1, 1], "block": [128, 1, 1],
    "shared_bytes": 4096, "form": {"kind": "ptb", "workers": 16}, "short_turnaround": true,
    "candidates": 6, "measured": 6, "complete": true, "original_ns": 380000,
    "normalized_speed": 0.8444444444444444, "turnaround_ns": 90000})"));
  CHECK(list[1]["form"] == nlohmann::json::parse(R"({"kind": "ptb", "workers": 0})"));
  CHECK(list[1]["name"] == "");
  CHECK(list[1]["original_ns"].is_null());
  CHECK(list[1]["normalized_speed"].is_null());
  CHECK(list[1]["turnaround_ns"].is_null());
  CHECK(list[2]["form"] == nlohmann::json::parse(R"({"kind": "original"})"));
  CHECK(list[2]["short_turnaround"] == false);
  CHECK(FormatProfilesJson({}) == "[]\n");
}

}  // namespace
}  // namespace tally::profiler
