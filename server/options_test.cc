// tally-server's --validate option: every accepted form, and clear errors for bad values.
#include "server/options.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace tally::server {
namespace {

using scheduler::FormKind;
using scheduler::LaunchForm;

absl::StatusOr<std::optional<ServerOptions>> Parse(std::vector<std::string> args) {
  unsetenv("TALLY_VALIDATE");
  args.insert(args.begin(), "tally-server");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), "emu.so");
}

TEST_CASE("--validate accepts slice:N, ptb:W, preempt and preempt:W") {
  CHECK(*ParseValidateForm("slice:4") == LaunchForm{.kind = FormKind::kSliced, .slices = 4});
  CHECK(*ParseValidateForm("ptb:3") == LaunchForm{.kind = FormKind::kPreemptible, .workers = 3});
  CHECK(*ParseValidateForm("preempt") ==
        LaunchForm{.kind = FormKind::kPreemptible, .preempt = true});
  CHECK(*ParseValidateForm("preempt:2") ==
        LaunchForm{.kind = FormKind::kPreemptible, .workers = 2, .preempt = true});
}

TEST_CASE("bad --validate values are errors that say what is wanted") {
  for (const char* value : {"", "slice", "slice:", "slice:0", "slice:-2", "slice:x", "ptb", "ptb:0",
                            "preempt:", "preempt:0", "original", "slice:99999999999"}) {
    INFO(value);
    auto form = ParseValidateForm(value);
    REQUIRE_FALSE(form.ok());
    CHECK(form.status().message().find("--validate") != absl::string_view::npos);
  }
  CHECK(ParseValidateForm("slice:x").status().message().find("slice count") !=
        absl::string_view::npos);
}

TEST_CASE("--validate on the command line and in TALLY_VALIDATE") {
  auto flag = Parse({"--validate=slice:3"});
  REQUIRE(flag.ok());
  CHECK((*flag)->validate == LaunchForm{.kind = FormKind::kSliced, .slices = 3});
  auto separate = Parse({"--validate", "ptb:2"});
  REQUIRE(separate.ok());
  CHECK((*separate)->validate == LaunchForm{.kind = FormKind::kPreemptible, .workers = 2});
  CHECK((*Parse({}))->validate == LaunchForm{});
  CHECK_FALSE(Parse({"--validate=bogus"}).ok());

  setenv("TALLY_VALIDATE", "preempt", 1);
  std::string arg0 = "tally-server";
  char* argv[] = {arg0.data()};
  auto env = ParseOptions(1, argv, "emu.so");
  unsetenv("TALLY_VALIDATE");
  REQUIRE(env.ok());
  CHECK((*env)->validate == LaunchForm{.kind = FormKind::kPreemptible, .preempt = true});
}

}  // namespace
}  // namespace tally::server
