// Allocate's pure parts (container_allocation.h).
#include "tools/tally_device_plugin/container_allocation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tally::device_plugin {
namespace {

void AddMount(v1beta1::ContainerAllocateResponse& response, const std::string& container_path,
              const std::string& host_path) {
  v1beta1::Mount* mount = response.add_mounts();
  mount->set_container_path(container_path);
  mount->set_host_path(host_path);
  mount->set_read_only(true);
}

}  // namespace

absl::StatusOr<ContainerPlan> PlanContainer(const std::vector<std::string>& device_ids,
                                            ReplicaKind kind) {
  if (device_ids.empty()) return absl::InvalidArgumentError("a container asked for no devices");
  ContainerPlan plan;
  plan.kind = kind;
  for (const std::string& text : device_ids) {
    auto id = ParseReplicaId(text);
    if (!id.ok()) return id.status();
    if (id->kind != kind) {
      return absl::InvalidArgumentError(
          absl::StrFormat("device '%s' is a %s replica, not one of gpu-%s", text,
                          KindName(id->kind), KindName(kind)));
    }
    if (plan.gpu_uuid.empty()) plan.gpu_uuid = id->gpu_uuid;
    if (id->gpu_uuid != plan.gpu_uuid) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the container's replicas are on two GPUs (%s and %s): a container's Tally replicas "
          "must all be on one GPU",
          plan.gpu_uuid, id->gpu_uuid));
    }
  }
  plan.grant_name = *std::min_element(device_ids.begin(), device_ids.end());
  plan.replicas = static_cast<int>(device_ids.size());
  return plan;
}

std::string ContainerClientLibrary() {
  return absl::StrCat(kContainerInstallDir, "/", TALLY_INSTALLED_CLIENT_LIBRARY);
}

std::string LdSoPreloadPath(const PluginConfig& config) {
  return config.kubelet_dir + "/tally-ld.so.preload";
}

v1beta1::ContainerAllocateResponse ContainerResponse(const PluginConfig& config,
                                                     const std::string& grant_directory,
                                                     uid_t server_uid) {
  v1beta1::ContainerAllocateResponse response;
  AddMount(response, kContainerRunDir, grant_directory);
  AddMount(response, kContainerInstallDir, config.install_dir);
  auto& envs = *response.mutable_envs();
  envs["TALLY_SERVER"] = absl::StrCat(kContainerRunDir, "/server.sock");
  envs["TALLY_SERVER_UID"] = absl::StrCat(server_uid);
  if (config.preload == PreloadMode::kEnv) {
    envs["LD_PRELOAD"] = ContainerClientLibrary();
  } else {
    AddMount(response, "/etc/ld.so.preload", LdSoPreloadPath(config));
  }
  return response;
}

}  // namespace tally::device_plugin
