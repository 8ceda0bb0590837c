// tally-server's options: --validate's forms, the scheduling flags, --unfenceable, and clear
// errors for bad values, naming the flag or the environment variable they were given as.
#include "server/options.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
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
  CHECK(*ParseValidateForm("slice:4") == ValidateMode{LaunchForm::Sliced(4), false});
  CHECK(*ParseValidateForm("ptb:3") == ValidateMode{LaunchForm::Preemptible(3), false});
  CHECK(*ParseValidateForm("preempt") == ValidateMode{LaunchForm::Preemptible(), true});
  CHECK(*ParseValidateForm("preempt:2") == ValidateMode{LaunchForm::Preemptible(2), true});
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
  CHECK((*flag)->validate == ValidateMode{LaunchForm::Sliced(3), false});
  auto separate = Parse({"--validate", "ptb:2"});
  REQUIRE(separate.ok());
  CHECK((*separate)->validate == ValidateMode{LaunchForm::Preemptible(2), false});
  CHECK_FALSE((*Parse({}))->validate.has_value());
  CHECK_FALSE(Parse({"--validate=bogus"}).ok());

  setenv("TALLY_VALIDATE", "preempt", 1);
  std::string arg0 = "tally-server";
  char* argv[] = {arg0.data()};
  auto env = ParseOptions(1, argv, "emu.so");
  unsetenv("TALLY_VALIDATE");
  REQUIRE(env.ok());
  CHECK((*env)->validate == ValidateMode{LaunchForm::Preemptible(), true});
}

TEST_CASE("Scheduling flags: policy names, times in milliseconds, the priority cap") {
  auto parsed = Parse({"--policy=fifo", "--min-idle-ms", "0.5", "--turnaround-ms=2",
                       "--max-client-priority=1", "--profile-cache=none"});
  REQUIRE(parsed.ok());
  const ServerOptions& options = **parsed;
  CHECK(options.policy == "fifo");
  CHECK(options.Times(false).min_idle_ms == 0.5);
  CHECK(options.Times(true).min_idle_ms == 0.5);
  CHECK(options.Times(false).turnaround_ms == 2);
  CHECK(options.Times(false).long_idle_ms == kGpuDefaults.long_idle_ms);
  CHECK(options.Times(true).long_idle_ms == kEmulatorDefaults.long_idle_ms);
  CHECK(options.max_client_priority == 1);
  CHECK(options.profile_cache == "none");
  CHECK((*Parse({}))->policy == "priority");
  CHECK_FALSE((*Parse({}))->max_client_priority.has_value());
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--policy=lottery"}, {"--min-idle-ms=0"}, {"--min-idle-ms=-1"}, {"--turnaround-ms=x"},
           {"--long-idle-ms=nan"}, {"--max-client-priority=high"}, {"--profile-cache="}}) {
    INFO(bad[0]);
    auto result = Parse(bad);
    REQUIRE_FALSE(result.ok());
    const std::string flag = bad[0].substr(0, bad[0].find('='));
    CHECK(result.status().message().find(flag) != absl::string_view::npos);
  }
}

TEST_CASE("--kept-modules: 16 by default, 0 to unload at once, a bounded count") {
  unsetenv("TALLY_KEPT_MODULES");
  CHECK((*Parse({}))->kept_modules == 16);
  CHECK((*Parse({"--kept-modules=0"}))->kept_modules == 0);
  setenv("TALLY_KEPT_MODULES", "3", 1);
  CHECK((*Parse({}))->kept_modules == 3);
  unsetenv("TALLY_KEPT_MODULES");
  for (const char* bad : {"--kept-modules=-1", "--kept-modules=many", "--kept-modules=100000"}) {
    INFO(bad);
    auto result = Parse({bad});
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find("--kept-modules") != absl::string_view::npos);
  }
}

TEST_CASE("The forms worker: --forms-threads (1 to 64) and --forms-wait-ms (10 s by default)") {
  unsetenv("TALLY_FORMS_THREADS");
  unsetenv("TALLY_FORMS_WAIT_MS");
  CHECK((*Parse({}))->forms_threads == 1);
  CHECK((*Parse({}))->forms_wait_ms == 10000);
  CHECK((*Parse({"--forms-threads=4"}))->forms_threads == 4);
  CHECK((*Parse({"--forms-wait-ms=250"}))->forms_wait_ms == 250);
  setenv("TALLY_FORMS_THREADS", "2", 1);
  setenv("TALLY_FORMS_WAIT_MS", "0.5", 1);
  CHECK((*Parse({}))->forms_threads == 2);
  CHECK((*Parse({}))->forms_wait_ms == 0.5);
  CHECK((*Parse({"--forms-threads=3"}))->forms_threads == 3);  // the flag wins
  unsetenv("TALLY_FORMS_THREADS");
  unsetenv("TALLY_FORMS_WAIT_MS");
  for (const char* bad :
       {"--forms-threads=0", "--forms-threads=65", "--forms-threads=two", "--forms-wait-ms=0",
        "--forms-wait-ms=-5", "--forms-wait-ms=soon", "--forms-wait-ms=4000000"}) {
    INFO(bad);
    auto result = Parse({bad});
    REQUIRE_FALSE(result.ok());
    const std::string flag(std::string_view(bad).substr(0, std::string_view(bad).find('=')));
    CHECK(result.status().message().find(flag) != absl::string_view::npos);
  }
}

TEST_CASE("--code-cache: a folder or none, bounded by --code-cache-size (1 GiB by default)") {
  unsetenv("TALLY_CODE_CACHE");
  unsetenv("TALLY_CODE_CACHE_SIZE");
  const ServerOptions defaults = **Parse({});
  CHECK(defaults.code_cache.empty());
  CHECK(defaults.code_cache_size == uint64_t{1} << 30);
  auto parsed = Parse({"--code-cache=/tmp/cc", "--code-cache-size=64M"});
  REQUIRE(parsed.ok());
  CHECK((*parsed)->code_cache == "/tmp/cc");
  CHECK((*parsed)->code_cache_size == uint64_t{64} << 20);
  setenv("TALLY_CODE_CACHE", "none", 1);
  CHECK((*Parse({}))->code_cache == "none");
  unsetenv("TALLY_CODE_CACHE");
  for (const char* bad : {"--code-cache=", "--code-cache-size=0", "--code-cache-size=lots"}) {
    INFO(bad);
    auto result = Parse({bad});
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().message().find(std::string(bad).substr(0, std::string(bad).find('='))) !=
          absl::string_view::npos);
  }
}

TEST_CASE("--slowdown-budget: 0% by default, a budget at a percentile, clear errors") {
  unsetenv("TALLY_DEFAULT_SLOWDOWN_BUDGET");
  CHECK((*Parse({}))->slowdown_budget == SlowdownBudget{0, 0.99});
  CHECK((*Parse({"--policy=priority-budget", "--slowdown-budget", "10%@p95"}))->slowdown_budget ==
        SlowdownBudget{0.1, 0.95});
  auto bad = Parse({"--slowdown-budget", "10"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("--slowdown-budget: a slowdown budget is a percentage") == 0);
  // A budget the policy would ignore is refused, not taken silently; 0% is every policy's.
  auto unused = Parse({"--slowdown-budget", "10%"});
  REQUIRE_FALSE(unused.ok());
  CHECK(
      unused.status().message() ==
      "--slowdown-budget 10%@p99 refused: --policy priority has no budgets (priority-budget has)");
  CHECK(Parse({"--policy=fifo", "--slowdown-budget", "0%"}).ok());
  // --validate replaces even priority-budget with a policy that has none.
  auto validated =
      Parse({"--policy=priority-budget", "--validate=slice:2", "--slowdown-budget", "10%"});
  REQUIRE_FALSE(validated.ok());
  CHECK(validated.status().message() ==
        "--slowdown-budget 10%@p99 refused: --validate replaces the policy with one that has no "
        "budgets");
  CHECK(Parse({"--validate=slice:2", "--slowdown-budget", "0%"}).ok());
  // From the environment, the refusal names the variable.
  setenv("TALLY_DEFAULT_SLOWDOWN_BUDGET", "10%", 1);
  auto from_env = Parse({"--policy=fifo"});
  unsetenv("TALLY_DEFAULT_SLOWDOWN_BUDGET");
  REQUIRE_FALSE(from_env.ok());
  CHECK(from_env.status().message() ==
        "TALLY_DEFAULT_SLOWDOWN_BUDGET 10%@p99 refused: --policy fifo has no budgets "
        "(priority-budget has)");
}

TEST_CASE("Why a budget has no effect: the policy, or --validate replacing it") {
  ServerOptions options;
  CHECK(options.WhyNoBudgets() == "--policy priority has no budgets (priority-budget has)");
  options.policy = "priority-budget";
  CHECK(options.WhyNoBudgets().empty());
  options.validate = ValidateMode{LaunchForm::Sliced(2), false};
  CHECK(options.WhyNoBudgets() == "--validate replaces the policy with one that has no budgets");
  // A client's own budget: said to have no effect only when above 0% and not spent.
  CHECK(options.IgnoredBudget(SlowdownBudget{0.1, 0.95}) ==
        "slowdown budget 10%@p95 has no effect: --validate replaces the policy with one that has "
        "no budgets");
  CHECK(options.IgnoredBudget(SlowdownBudget{0, 0.99}).empty());
  CHECK(options.IgnoredBudget(std::nullopt).empty());
  options.validate.reset();
  CHECK(options.IgnoredBudget(SlowdownBudget{0.1, 0.95}).empty());
}

TEST_CASE("A bad value from the environment is reported naming its variable, not the flag") {
  struct Setting {
    const char* flag;
    const char* variable;
    const char* bad;
  };
  for (const Setting& setting :
       std::vector<Setting>{{"--emulate", "TALLY_EMULATE", "maybe"},
                            {"--device", "TALLY_DEVICE", "GPU-xyz"},
                            {"--validate", "TALLY_VALIDATE", "slice:0"},
                            {"--policy", "TALLY_POLICY", "lottery"},
                            {"--slowdown-budget", "TALLY_DEFAULT_SLOWDOWN_BUDGET", "abc"},
                            {"--min-idle-ms", "TALLY_MIN_IDLE_MS", "0"},
                            {"--long-idle-ms", "TALLY_LONG_IDLE_MS", "x"},
                            {"--shape-alone", "TALLY_SHAPE_ALONE", "sometimes"},
                            {"--turnaround-ms", "TALLY_TURNAROUND_MS", "-1"},
                            {"--max-client-priority", "TALLY_MAX_CLIENT_PRIORITY", "high"},
                            {"--teardown-timeout-ms", "TALLY_TEARDOWN_TIMEOUT_MS", "0"},
                            {"--handshake-timeout-ms", "TALLY_HANDSHAKE_TIMEOUT_MS", "soon"},
                            {"--max-clients", "TALLY_MAX_CLIENTS", "0"},
                            {"--admission", "TALLY_ADMISSION", "maybe"},
                            {"--admission-timeout-ms", "TALLY_ADMISSION_TIMEOUT_MS", "0"},
                            {"--max-queued-commands", "TALLY_MAX_QUEUED_COMMANDS", "0"},
                            {"--max-streams", "TALLY_MAX_STREAMS", "-3"},
                            {"--max-events", "TALLY_MAX_EVENTS", "many"},
                            {"--max-modules", "TALLY_MAX_MODULES", "0"},
                            {"--max-module-size", "TALLY_MAX_MODULE_SIZE", "2G"},
                            {"--client-memory-limit", "TALLY_CLIENT_MEMORY_LIMIT", "lots"},
                            {"--client-pinned-limit", "TALLY_CLIENT_PINNED_LIMIT", "4Q"},
                            {"--library-kernels", "TALLY_LIBRARY_KERNELS", "fast"},
                            {"--isolation", "TALLY_ISOLATION", "total"},
                            {"--unfenceable", "TALLY_UNFENCEABLE", "sometimes"},
                            {"--unfenceable-wait-ms", "TALLY_UNFENCEABLE_WAIT_MS", "0"},
                            {"--access", "TALLY_ACCESS", "group:no-such-group-of-tally"},
                            {"--code-cache-size", "TALLY_CODE_CACHE_SIZE", "0"},
                            {"--kept-modules", "TALLY_KEPT_MODULES", "-1"},
                            {"--forms-threads", "TALLY_FORMS_THREADS", "65"},
                            {"--forms-wait-ms", "TALLY_FORMS_WAIT_MS", "0"}}) {
    INFO(setting.variable << "=" << setting.bad);
    // The flag's error stays as it was: it names the flag.
    auto flag = Parse({std::string(setting.flag) + "=" + setting.bad});
    REQUIRE_FALSE(flag.ok());
    const std::string flag_error(flag.status().message());
    REQUIRE(flag_error.starts_with(setting.flag));
    setenv(setting.variable, setting.bad, 1);
    std::string arg0 = "tally-server";  // not Parse, which clears TALLY_VALIDATE
    char* argv[] = {arg0.data()};
    auto env = ParseOptions(1, argv, "emu.so");
    unsetenv(setting.variable);
    REQUIRE_FALSE(env.ok());
    CHECK(env.status().message() ==
          setting.variable + flag_error.substr(std::string_view(setting.flag).size()));
  }
}

TEST_CASE("Library kernels: by-priority by default, a named rule, a vendor folder") {
  CHECK((*Parse({}))->library_kernels == LibraryKernelRule::kByPriority);
  CHECK((*Parse({}))->vendor_libraries.empty());
  auto parsed = Parse({"--library-kernels=own", "--vendor-libraries", "/opt/cublas/lib"});
  REQUIRE(parsed.ok());
  CHECK((*parsed)->library_kernels == LibraryKernelRule::kOwn);
  CHECK((*parsed)->vendor_libraries == "/opt/cublas/lib");
  CHECK((*Parse({"--library-kernels=vendor"}))->library_kernels == LibraryKernelRule::kVendor);
  for (const auto& bad :
       std::vector<std::vector<std::string>>{{"--library-kernels=fast"}, {"--vendor-libraries="}}) {
    INFO(bad[0]);
    auto result = Parse(bad);
    REQUIRE_FALSE(result.ok());
    const std::string flag = bad[0].substr(0, bad[0].find('='));
    CHECK(result.status().message().find(flag) != absl::string_view::npos);
  }
}

TEST_CASE("--shape-alone: off by default, on bare or from TALLY_SHAPE_ALONE") {
  CHECK_FALSE((*Parse({}))->shape_alone);
  CHECK((*Parse({"--shape-alone"}))->shape_alone);
  setenv("TALLY_SHAPE_ALONE", "true", 1);
  CHECK((*Parse({}))->shape_alone);
  setenv("TALLY_SHAPE_ALONE", "sometimes", 1);
  auto bad = Parse({});
  unsetenv("TALLY_SHAPE_ALONE");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("TALLY_SHAPE_ALONE") != absl::string_view::npos);
}

TEST_CASE("--unfenceable: refuse by default; alone only under --isolation fenced") {
  const ServerOptions defaults = **Parse({});
  CHECK(defaults.unfenceable == Unfenceable::kRefuse);
  CHECK(defaults.unfenceable_wait_ms == 10000);
  auto alone = Parse({"--isolation=fenced", "--unfenceable=alone", "--unfenceable-wait-ms=250"});
  REQUIRE(alone.ok());
  CHECK((*alone)->unfenceable == Unfenceable::kAlone);
  CHECK((*alone)->unfenceable_wait_ms == 250);
  setenv("TALLY_UNFENCEABLE", "alone", 1);
  auto from_env = Parse({"--isolation=fenced"});
  auto without_fence = Parse({"--isolation=strict"});
  unsetenv("TALLY_UNFENCEABLE");
  REQUIRE(from_env.ok());
  CHECK((*from_env)->unfenceable == Unfenceable::kAlone);
  REQUIRE_FALSE(without_fence.ok());
  CHECK(without_fence.status().message() ==
        "TALLY_UNFENCEABLE alone needs --isolation fenced, not strict");  // where it was given
  CHECK(Parse({"--unfenceable=alone"}).status().message() ==
        "--unfenceable alone needs --isolation fenced, not none");
  auto bad = Parse({"--unfenceable=sometimes"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "--unfenceable wants refuse or alone, not 'sometimes'");
}

}  // namespace
}  // namespace tally::server

namespace tally::server {
namespace {

TEST_CASE("--access takes user, group:NAME of an existing group, or any") {
  auto any = Parse({"--access=any"});
  REQUIRE(any.ok());
  CHECK((*any)->access == "any");
  auto unknown = Parse({"--access", "group:no-such-group-of-tally"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("no group 'no-such-group-of-tally'") !=
        absl::string_view::npos);
  CHECK_FALSE(Parse({"--access=everyone"}).ok());
}

}  // namespace
}  // namespace tally::server
