// Allocate's pure parts: which grant a container's device IDs ask for, and the answer that
// hands the grant to the container (mounts and environment).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "device_plugin.pb.h"
#include "tools/tally_device_plugin/plugin_config.h"
#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {

// Where the container sees the grant's directory (holding server.sock) and Tally's installation.
inline constexpr char kContainerRunDir[] = "/run/tally";
inline constexpr char kContainerInstallDir[] = "/opt/tally";

// The grant a container gets: on the GPU of all its replicas, named by its smallest device ID
// (sorted as strings), with the memory of all its replicas.
struct ContainerPlan {
  std::string gpu_uuid;
  std::string grant_name;
  ReplicaKind kind = ReplicaKind::kHigh;
  int replicas = 0;
};

// InvalidArgument saying why when the IDs are none, not ours, of the other resource, or on
// several GPUs.
absl::StatusOr<ContainerPlan> PlanContainer(const std::vector<std::string>& device_ids,
                                            ReplicaKind kind);

// The shim's path inside the container: under kContainerInstallDir, where the installation
// keeps it (lib/tally/libtally_client.so with CMake's layout).
std::string ContainerClientLibrary();

// The host file mounted at /etc/ld.so.preload with --preload ld-so-preload (it names
// ContainerClientLibrary()), kept in the kubelet's directory beside the plugin's sockets.
std::string LdSoPreloadPath(const PluginConfig& config);

// The answer for one container given its grant's directory on the host and the uid its server
// runs as: the grant's directory at /run/tally and the installation at /opt/tally, both
// read-only (with ld-so-preload also the file at /etc/ld.so.preload); TALLY_SERVER,
// TALLY_SERVER_UID (the shim trusts a server of that uid, whose name the container may not
// know) and, with env, LD_PRELOAD.
v1beta1::ContainerAllocateResponse ContainerResponse(const PluginConfig& config,
                                                     const std::string& grant_directory,
                                                     uid_t server_uid);

}  // namespace tally::device_plugin
