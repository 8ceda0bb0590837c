// The plugin's grants on the servers (container_grants.h).
#include "tools/tally_device_plugin/container_grants.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "tools/kubelet_api/pod_devices.h"
#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {
namespace {

constexpr absl::Duration kServerTimeout = absl::Seconds(5);
constexpr absl::Duration kPodResourcesTimeout = absl::Seconds(5);

absl::StatusOr<ipc::GrantStatus> Granted(const absl::StatusOr<ipc::GrantReply>& reply) {
  if (!reply.ok()) return reply.status();
  if (reply->ok == 0) return absl::FailedPreconditionError(reply->message);
  return reply->grant;
}

}  // namespace

absl::StatusOr<ipc::GrantStatus> MakeContainerGrant(const std::string& socket,
                                                    const ipc::ClientCeiling& terms,
                                                    const ipc::ServerTrust& trust) {
  auto status = ipc::QueryStatus(socket, kServerTimeout, trust);
  if (!status.ok()) return status.status();
  const bool left =
      std::any_of(status->grants.begin(), status->grants.end(),
                  [&](const ipc::GrantStatus& grant) { return grant.name == terms.grant; });
  if (left) {
    TALLY_LOG_INFO("tally-device-plugin: revoking the grant {} left on {} to make it again",
                   terms.grant, socket);
    auto revoked = Granted(ipc::RevokeGrant(socket, terms.grant, false, kServerTimeout, trust));
    if (!revoked.ok()) return revoked.status();
  }
  return Granted(ipc::MakeGrant(socket, terms, kServerTimeout, trust));
}

std::string GrantDirectory(const ipc::GrantStatus& grant) {
  const std::string socket = grant.socket;
  const size_t slash = socket.rfind('/');
  return slash == std::string::npos ? "." : socket.substr(0, slash);
}

std::vector<std::string> OrphanedGrants(const std::string& gpu_uuid,
                                        const std::vector<ipc::GrantStatus>& grants,
                                        const std::set<std::string>& live) {
  std::vector<std::string> orphaned;
  for (const ipc::GrantStatus& grant : grants) {
    const std::string name = grant.name;
    auto id = ParseReplicaId(name);
    if (!id.ok() || id->gpu_uuid != gpu_uuid || live.contains(name)) continue;
    orphaned.push_back(name);
  }
  return orphaned;
}

void GrantSweeper::Sweep(const std::vector<GpuState>& gpus) {
  auto containers = kubelet::ListContainerDevices(config_.pod_resources_socket,
                                                  config_.resource_prefix, kPodResourcesTimeout);
  if (!containers.ok()) {
    TALLY_LOG_WARN("tally-device-plugin: no clean-up of grants: {}",
                   std::string(containers.status().message()));
    return;
  }
  std::set<std::string> live;
  for (const kubelet::ContainerDevices& container : *containers) {
    if (!container.device_ids.empty()) live.insert(kubelet::GrantNameOf(container.device_ids));
  }
  std::set<std::string> suspects;
  for (const GpuState& gpu : gpus) {
    auto status = ipc::QueryStatus(gpu.socket, kServerTimeout, trust_);
    if (!status.ok()) continue;
    for (const std::string& name : OrphanedGrants(gpu.uuid, status->grants, live)) {
      const std::string key = absl::StrCat(gpu.socket, " ", name);
      if (!suspects_.contains(key)) {
        suspects.insert(key);
        continue;
      }
      auto revoked = ipc::RevokeGrant(gpu.socket, name, false, kServerTimeout, trust_);
      if (revoked.ok() && revoked->ok != 0) {
        TALLY_LOG_INFO("tally-device-plugin: revoked {} on {}: no container of a pod has it", name,
                       gpu.socket);
      } else {
        suspects.insert(key);  // try again at the next sweep
      }
    }
  }
  suspects_ = std::move(suspects);
}

}  // namespace tally::device_plugin
