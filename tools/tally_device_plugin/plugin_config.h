// tally-device-plugin's settings: flags (CLI11), each also a NAME=VALUE line of `--config FILE`
// (common/config_file.h) under the name of its TALLY_PLUGIN_* variable; a flag overrides the
// file. One table (plugin_config.cc) gives both, and --help.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config_file.h"
#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {

enum class PreloadMode {
  kEnv,          // LD_PRELOAD in the container's environment
  kLdSoPreload,  // besides, a file naming the library mounted at /etc/ld.so.preload
};

struct PluginConfig {
  std::string resource_prefix = "tally.dev";
  int high_replicas = 2;
  int best_effort_replicas = 4;
  // Device memory per replica; unset: the device's memory / its replicas.
  std::optional<uint64_t> high_memory;
  std::optional<uint64_t> best_effort_memory;
  PreloadMode preload = PreloadMode::kEnv;
  std::string install_dir = "/opt/tally";
  std::string run_dir = "/run/tally";
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  absl::Duration poll_interval = absl::Seconds(2);      // the servers' status
  absl::Duration cleanup_interval = absl::Seconds(30);  // grants of pods that are gone

  int Replicas(ReplicaKind kind) const;
  // The memory of one replica of a device of `device_memory` bytes.
  uint64_t ReplicaMemory(ReplicaKind kind, uint64_t device_memory) const;
  // "<prefix>/gpu-high", "<prefix>/gpu-best-effort".
  std::string ResourceName(ReplicaKind kind) const;
};

// Sets the setting whose variable is `name` (TALLY_PLUGIN_HIGH_REPLICAS) from `value`;
// InvalidArgument saying what is wrong, or naming an unknown variable.
absl::Status ApplySetting(const std::string& name, const std::string& value, PluginConfig& config);

// The entries of a configuration file, in order; the first error names its file and line.
absl::Status ApplyConfigEntries(const std::string& path, const std::vector<ConfigEntry>& entries,
                                PluginConfig& config);

// The command line: every setting's flag, --config FILE, --help.
class CommandLine {
 public:
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Parse with app().parse(...), which throws CLI11's exceptions (app().exit(e) reports them).
  CLI::App& app() { return app_; }
  // The configuration file's settings (when given), then the flags'.
  absl::StatusOr<PluginConfig> Resolve() const;

 private:
  CLI::App app_;
  std::string config_path_;
  // Per setting (in plugin_config.cc's table): its flag and the value parsed.
  std::vector<CLI::Option*> flags_;
  std::vector<std::string> values_;
};

}  // namespace tally::device_plugin
