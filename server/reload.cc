// The settings a reload compares (reload.h), one row each: its flag, whether the running server
// can take a new value, and its value as text.
#include "server/reload.h"

#include <fmt/format.h>

#include <string_view>

#include "absl/strings/str_format.h"
#include "common/device_uuid.h"

namespace tally::server {
namespace {

template <typename T>
std::string Text(const std::optional<T>& value) {
  return value ? fmt::format("{}", *value) : std::string("unset");
}
std::string Text(uint64_t count) { return absl::StrFormat("%d", count); }
std::string Limit(uint64_t bytes) {
  return bytes == ipc::kNoLimit ? std::string("none") : absl::StrFormat("%d", bytes);
}

struct Setting {
  std::string_view flag;
  bool reloadable;
  std::string (*value)(const ServerOptions&);
};

constexpr Setting kSettings[] = {
    {"emulate", false,
     [](const ServerOptions& o) { return std::string(o.emulate ? "on" : "off"); }},
    {"device", false,
     [](const ServerOptions& o) {
       return o.device_uuid ? FormatDeviceUuid(*o.device_uuid) : absl::StrFormat("%d", o.device);
     }},
    {"run-dir", false, [](const ServerOptions& o) { return o.run_dir; }},
    {"socket", false, [](const ServerOptions& o) { return o.socket_path; }},
    {"emulator-library", false, [](const ServerOptions& o) { return o.emulator_library; }},
    {"validate", false,
     [](const ServerOptions& o) {
       return o.validate ? DescribeValidateMode(*o.validate) : std::string("off");
     }},
    {"policy", false, [](const ServerOptions& o) { return o.policy; }},
    {"slowdown-budget", false, [](const ServerOptions& o) { return o.slowdown_budget.ToString(); }},
    {"shape-alone", false,
     [](const ServerOptions& o) { return std::string(o.shape_alone ? "on" : "off"); }},
    {"min-idle-ms", false, [](const ServerOptions& o) { return Text(o.min_idle_ms); }},
    {"long-idle-ms", false, [](const ServerOptions& o) { return Text(o.long_idle_ms); }},
    {"turnaround-ms", false, [](const ServerOptions& o) { return Text(o.turnaround_ms); }},
    {"max-client-priority", true,
     [](const ServerOptions& o) { return Text(o.max_client_priority); }},
    {"teardown-timeout-ms", true,
     [](const ServerOptions& o) { return fmt::format("{}", o.teardown_timeout_ms); }},
    {"handshake-timeout-ms", false,
     [](const ServerOptions& o) { return fmt::format("{}", o.handshake_timeout_ms); }},
    {"max-clients", true,
     [](const ServerOptions& o) { return absl::StrFormat("%d", o.max_clients); }},
    {"admission", false,
     [](const ServerOptions& o) { return std::string(o.admission_wait ? "wait" : "fail"); }},
    {"admission-timeout-ms", false,
     [](const ServerOptions& o) { return fmt::format("{}", o.admission_timeout_ms); }},
    {"max-queued-commands", true,
     [](const ServerOptions& o) { return Text(o.limits.max_queued_commands); }},
    {"max-streams", true, [](const ServerOptions& o) { return Text(o.limits.max_streams); }},
    {"max-events", true, [](const ServerOptions& o) { return Text(o.limits.max_events); }},
    {"max-modules", true, [](const ServerOptions& o) { return Text(o.limits.max_modules); }},
    {"max-module-size", true,
     [](const ServerOptions& o) { return Text(o.limits.max_module_bytes); }},
    {"client-memory-limit", true,
     [](const ServerOptions& o) { return Limit(o.limits.memory_limit); }},
    {"client-pinned-limit", true,
     [](const ServerOptions& o) { return Limit(o.limits.pinned_limit); }},
    {"library-kernels", false,
     [](const ServerOptions& o) { return std::string(LibraryKernelRuleName(o.library_kernels)); }},
    {"vendor-libraries", false, [](const ServerOptions& o) { return o.vendor_libraries; }},
    {"isolation", false,
     [](const ServerOptions& o) { return std::string(IsolationName(o.isolation)); }},
    {"access", false, [](const ServerOptions& o) { return o.access; }},
    {"profile-cache", false, [](const ServerOptions& o) { return o.profile_cache; }},
    {"code-cache", false, [](const ServerOptions& o) { return o.code_cache; }},
    {"code-cache-size", false, [](const ServerOptions& o) { return Text(o.code_cache_size); }},
    {"kept-modules", false, [](const ServerOptions& o) { return Text(o.kept_modules); }},
};

}  // namespace

OptionChanges CompareOptions(const ServerOptions& running, const ServerOptions& read) {
  OptionChanges changes;
  for (const Setting& setting : kSettings) {
    const std::string before = setting.value(running);
    const std::string after = setting.value(read);
    if (before == after) continue;
    (setting.reloadable ? changes.applied : changes.need_restart)
        .push_back(absl::StrFormat("--%s %s -> %s", setting.flag, before, after));
  }
  return changes;
}

}  // namespace tally::server
