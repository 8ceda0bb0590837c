// The grants the plugin makes on the servers (tally-ctl grant's control requests, ipc/control.h):
// one per container at Allocate, and the periodic removal of those whose pods are gone.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/control.h"
#include "ipc/peer_access.h"
#include "tools/tally_device_plugin/gpu_fleet.h"
#include "tools/tally_device_plugin/plugin_config.h"

namespace tally::device_plugin {

// Makes the grant `terms` on the server at `socket`. A grant of that name left there (by a
// container of a pod that is gone, whose replica now serves another) is revoked first, its
// clients let finish. Unavailable when the server does not answer, FailedPrecondition with the
// server's reason when it refuses.
absl::StatusOr<ipc::GrantStatus> MakeContainerGrant(const std::string& socket,
                                                    const ipc::ClientCeiling& terms,
                                                    const ipc::ServerTrust& trust);

// The grant's directory on the host: where its socket is.
std::string GrantDirectory(const ipc::GrantStatus& grant);

// Of the grants of GPU `gpu_uuid`'s server, those named like the plugin's (a replica ID of that
// GPU) that are no live container's grant (`live`: the smallest device ID of each container).
std::vector<std::string> OrphanedGrants(const std::string& gpu_uuid,
                                        const std::vector<ipc::GrantStatus>& grants,
                                        const std::set<std::string>& live);

// Revokes orphaned grants. A grant is revoked only when two sweeps in a row found it orphaned,
// so that a container allocated between the kubelet's answer to the pod-resources API and the
// servers' (or one the API lists a little late) keeps its grant. Its clients are let finish.
class GrantSweeper {
 public:
  GrantSweeper(const PluginConfig& config, ipc::ServerTrust trust)
      : config_(config), trust_(std::move(trust)) {}

  // One sweep over the GPUs' servers; does nothing when the pod-resources API does not answer.
  void Sweep(const std::vector<GpuState>& gpus);

 private:
  const PluginConfig& config_;
  const ipc::ServerTrust trust_;
  std::set<std::string> suspects_;  // "<server socket> <grant name>" orphaned at the last sweep
};

}  // namespace tally::device_plugin
