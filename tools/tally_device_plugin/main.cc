// tally-device-plugin: the Kubernetes device plugin of Tally (README.md). Registers two
// resources with the kubelet, serves them, registers again whenever the kubelet restarts (its
// socket is made anew), sweeps grants of pods that are gone, and ends on SIGTERM or SIGINT.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/time/clock.h"
#include "common/log.h"
#include "ipc/peer_access.h"
#include "tools/tally_device_plugin/container_allocation.h"
#include "tools/tally_device_plugin/container_grants.h"
#include "tools/tally_device_plugin/gpu_fleet.h"
#include "tools/tally_device_plugin/plugin_endpoint.h"

namespace tally::device_plugin {
namespace {

// How often the plugin looks at the kubelet's socket and its own, and for a signal.
constexpr absl::Duration kWatchInterval = absl::Milliseconds(500);

// The kubelet's socket's inode; 0 while there is none.
ino_t KubeletSocketInode(const PluginConfig& config) {
  struct stat info {};
  const std::string path = config.kubelet_dir + "/kubelet.sock";
  return stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode) ? info.st_ino : 0;
}

bool Exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

absl::Status WriteLdSoPreload(const PluginConfig& config) {
  const std::string path = LdSoPreloadPath(config);
  std::ofstream file(path, std::ios::trunc);
  file << ContainerClientLibrary() << "\n";
  file.close();
  if (!file || chmod(path.c_str(), 0644) != 0) {
    return absl::InternalError("cannot write " + path + ": " + std::strerror(errno));
  }
  return absl::OkStatus();
}

// Serves both resources anew and registers them; an error leaves them to be tried again.
absl::Status Serve(const PluginConfig& config, PluginEndpoint& high, PluginEndpoint& best_effort) {
  if (config.preload == PreloadMode::kLdSoPreload) {
    if (absl::Status status = WriteLdSoPreload(config); !status.ok()) return status;
  }
  for (PluginEndpoint* endpoint : {&high, &best_effort}) {
    if (absl::Status status = endpoint->Start(); !status.ok()) return status;
  }
  for (PluginEndpoint* endpoint : {&high, &best_effort}) {
    if (absl::Status status = endpoint->Register(); !status.ok()) return status;
  }
  TALLY_LOG_INFO("tally-device-plugin: registered {} and {} with the kubelet",
                 config.ResourceName(ReplicaKind::kHigh),
                 config.ResourceName(ReplicaKind::kBestEffort));
  return absl::OkStatus();
}

// Until SIGTERM or SIGINT (blocked in every thread, taken here).
void Run(const PluginConfig& config, const ipc::ServerTrust& trust, const sigset_t& signals) {
  GpuFleet fleet(config.run_dir, trust, config.poll_interval);
  fleet.Start();
  PluginEndpoint high(config, ReplicaKind::kHigh, fleet, trust);
  PluginEndpoint best_effort(config, ReplicaKind::kBestEffort, fleet, trust);
  GrantSweeper sweeper(config, trust);
  ino_t registered = 0;  // the kubelet socket registered with; 0: none
  absl::Time next_sweep = absl::Now() + config.cleanup_interval;
  const timespec wait = absl::ToTimespec(kWatchInterval);
  while (sigtimedwait(&signals, nullptr, &wait) < 0) {
    const ino_t kubelet = KubeletSocketInode(config);
    const bool ours_gone = !Exists(high.SocketPath()) || !Exists(best_effort.SocketPath());
    if (kubelet != 0 && (kubelet != registered || ours_gone)) {
      const absl::Status status = Serve(config, high, best_effort);
      if (!status.ok()) TALLY_LOG_WARN("tally-device-plugin: {}", std::string(status.message()));
      registered = status.ok() ? kubelet : 0;
    }
    if (absl::Now() >= next_sweep) {
      sweeper.Sweep(fleet.Snapshot());
      next_sweep = absl::Now() + config.cleanup_interval;
    }
  }
  TALLY_LOG_INFO("tally-device-plugin: stopping (grants stay for the pods that run)");
  high.Stop();
  best_effort.Stop();
  if (config.preload == PreloadMode::kLdSoPreload) unlink(LdSoPreloadPath(config).c_str());
}

}  // namespace
}  // namespace tally::device_plugin

int main(int argc, char** argv) {
  using namespace tally::device_plugin;
  CommandLine command_line;
  try {
    command_line.app().parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return command_line.app().exit(error) == 0 ? 0 : 2;
  }
  auto config = command_line.Resolve();
  if (!config.ok()) {
    std::fprintf(stderr, "tally-device-plugin: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  auto trust = tally::ipc::ServerTrust::FromEnvironment();
  if (!trust.ok()) {
    std::fprintf(stderr, "tally-device-plugin: %s\n",
                 std::string(trust.status().message()).c_str());
    return 2;
  }
  // Before any thread starts, so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  Run(*config, *trust, signals);
  return 0;
}
