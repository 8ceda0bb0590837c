// tally-device-plugin's settings (plugin_config.h).
#include "tools/tally_device_plugin/plugin_config.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/byte_size.h"
#include "common/status.h"
#include "tools/kubelet_api/pod_devices.h"

namespace tally::device_plugin {
namespace {

using Setter = absl::Status (*)(PluginConfig&, const std::string&);

struct Setting {
  const char* flag;
  const char* variable;
  const char* help;
  Setter set;
};

absl::Status Bad(const std::string& value, const std::string& want) {
  return absl::InvalidArgumentError(absl::StrFormat("'%s' is not %s", value, want));
}

absl::Status SetReplicas(int& field, const std::string& value) {
  int count = 0;
  if (!absl::SimpleAtoi(value, &count) || count < 1 || count > 1000) {
    return Bad(value, "a number of replicas from 1 to 1000");
  }
  field = count;
  return absl::OkStatus();
}

absl::Status SetMemory(std::optional<uint64_t>& field, const std::string& value) {
  auto bytes = ParseByteSize(value);
  if (!bytes.ok() || *bytes == 0) return Bad(value, "a size of memory (512M, 4G) above 0");
  field = *bytes;
  return absl::OkStatus();
}

absl::Status SetPath(std::string& field, const std::string& value) {
  if (!value.starts_with("/")) return Bad(value, "an absolute path");
  field = value;
  return absl::OkStatus();
}

absl::Status SetInterval(absl::Duration& field, const std::string& value) {
  double seconds = 0;
  if (!absl::SimpleAtod(value, &seconds) || !std::isfinite(seconds) || seconds < 0.1 ||
      seconds > 3600) {
    return Bad(value, "a number of seconds from 0.1 to 3600");
  }
  field = absl::Seconds(seconds);
  return absl::OkStatus();
}

absl::Status SetPrefix(PluginConfig& config, const std::string& value) {
  TALLY_RETURN_IF_ERROR(kubelet::CheckResourcePrefix(value));
  config.resource_prefix = value;
  return absl::OkStatus();
}

absl::Status SetPreload(PluginConfig& config, const std::string& value) {
  if (value == "env") {
    config.preload = PreloadMode::kEnv;
  } else if (value == "ld-so-preload") {
    config.preload = PreloadMode::kLdSoPreload;
  } else {
    return Bad(value, "env or ld-so-preload");
  }
  return absl::OkStatus();
}

constexpr Setting kSettings[] = {
    {"--resource-prefix", "TALLY_PLUGIN_RESOURCE_PREFIX",
     "the resources' domain: PREFIX/gpu-high and PREFIX/gpu-best-effort (default tally.dev)",
     SetPrefix},
    {"--high-replicas", "TALLY_PLUGIN_HIGH_REPLICAS",
     "gpu-high replicas advertised per GPU (default 2)",
     [](PluginConfig& c, const std::string& v) { return SetReplicas(c.high_replicas, v); }},
    {"--best-effort-replicas", "TALLY_PLUGIN_BEST_EFFORT_REPLICAS",
     "gpu-best-effort replicas advertised per GPU (default 4)",
     [](PluginConfig& c, const std::string& v) { return SetReplicas(c.best_effort_replicas, v); }},
    {"--high-memory", "TALLY_PLUGIN_HIGH_MEMORY",
     "device memory of one gpu-high replica (512M, 4G; default the GPU's memory / replicas)",
     [](PluginConfig& c, const std::string& v) { return SetMemory(c.high_memory, v); }},
    {"--best-effort-memory", "TALLY_PLUGIN_BEST_EFFORT_MEMORY",
     "device memory of one gpu-best-effort replica (default the GPU's memory / replicas)",
     [](PluginConfig& c, const std::string& v) { return SetMemory(c.best_effort_memory, v); }},
    {"--preload", "TALLY_PLUGIN_PRELOAD",
     "how containers load the shim: env (LD_PRELOAD) or ld-so-preload (also a file mounted at "
     "/etc/ld.so.preload; default env)",
     SetPreload},
    {"--install-dir", "TALLY_PLUGIN_INSTALL_DIR",
     "Tally's installation on the host, mounted read-only at /opt/tally (default /opt/tally)",
     [](PluginConfig& c, const std::string& v) { return SetPath(c.install_dir, v); }},
    {"--run-dir", "TALLY_PLUGIN_RUN_DIR",
     "the servers' run directory, one GPU-<uuid>.sock per GPU (default /run/tally)",
     [](PluginConfig& c, const std::string& v) { return SetPath(c.run_dir, v); }},
    {"--kubelet-dir", "TALLY_PLUGIN_KUBELET_DIR",
     "the kubelet's device-plugin directory, holding kubelet.sock and the plugin's sockets "
     "(default /var/lib/kubelet/device-plugins)",
     [](PluginConfig& c, const std::string& v) { return SetPath(c.kubelet_dir, v); }},
    {"--pod-resources-socket", "TALLY_PLUGIN_POD_RESOURCES_SOCKET",
     "the kubelet's pod-resources socket, to find grants of pods that are gone (default "
     "/var/lib/kubelet/pod-resources/kubelet.sock)",
     [](PluginConfig& c, const std::string& v) { return SetPath(c.pod_resources_socket, v); }},
    {"--poll-interval", "TALLY_PLUGIN_POLL_INTERVAL",
     "seconds between asking the servers for their status (default 2)",
     [](PluginConfig& c, const std::string& v) { return SetInterval(c.poll_interval, v); }},
    {"--cleanup-interval", "TALLY_PLUGIN_CLEANUP_INTERVAL",
     "seconds between looking for grants of pods that are gone (default 30)",
     [](PluginConfig& c, const std::string& v) { return SetInterval(c.cleanup_interval, v); }},
};

}  // namespace

int PluginConfig::Replicas(ReplicaKind kind) const {
  return kind == ReplicaKind::kHigh ? high_replicas : best_effort_replicas;
}

uint64_t PluginConfig::ReplicaMemory(ReplicaKind kind, uint64_t device_memory) const {
  const std::optional<uint64_t>& given =
      kind == ReplicaKind::kHigh ? high_memory : best_effort_memory;
  return given ? *given : device_memory / static_cast<uint64_t>(Replicas(kind));
}

std::string PluginConfig::ResourceName(ReplicaKind kind) const {
  return absl::StrCat(resource_prefix, "/gpu-", KindName(kind));
}

absl::Status ApplySetting(const std::string& name, const std::string& value, PluginConfig& config) {
  for (const Setting& setting : kSettings) {
    if (name != setting.variable) continue;
    const absl::Status status = setting.set(config, value);
    if (status.ok()) return status;
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", status.message()));
  }
  return absl::InvalidArgumentError(absl::StrCat(name, " is not a setting of tally-device-plugin"));
}

absl::Status ApplyConfigEntries(const std::string& path, const std::vector<ConfigEntry>& entries,
                                PluginConfig& config) {
  for (const ConfigEntry& entry : entries) {
    const absl::Status status = ApplySetting(entry.name, entry.value, config);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: %s", path, entry.line, status.message()));
    }
  }
  return absl::OkStatus();
}

CommandLine::CommandLine()
    : app_(
          "tally-device-plugin: advertises each GPU's Tally server to the kubelet as replicas of "
          "two resources, PREFIX/gpu-high and PREFIX/gpu-best-effort, and hands each container "
          "a grant of its GPU's server (tally-ctl grant) with the priority and memory of its "
          "replicas. Runs until SIGTERM or SIGINT.") {
  app_.add_option("--config", config_path_,
                  "a file of NAME=VALUE lines naming these settings by their variables "
                  "(TALLY_PLUGIN_HIGH_REPLICAS=2); flags override it")
      ->option_text("FILE");
  values_.resize(std::size(kSettings));
  for (size_t i = 0; i < std::size(kSettings); ++i) {
    const Setting& setting = kSettings[i];
    flags_.push_back(app_.add_option(setting.flag, values_[i],
                                     absl::StrCat(setting.help, "; ", setting.variable))
                         ->option_text("VALUE"));
  }
}

absl::StatusOr<PluginConfig> CommandLine::Resolve() const {
  PluginConfig config;
  if (!config_path_.empty()) {
    TALLY_ASSIGN_OR_RETURN(const std::vector<ConfigEntry> entries, ReadConfigFile(config_path_));
    TALLY_RETURN_IF_ERROR(ApplyConfigEntries(config_path_, entries, config));
  }
  for (size_t i = 0; i < flags_.size(); ++i) {
    if (flags_[i]->count() == 0) continue;
    const absl::Status status = kSettings[i].set(config, values_[i]);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(kSettings[i].flag, ": ", status.message()));
    }
  }
  return config;
}

}  // namespace tally::device_plugin
