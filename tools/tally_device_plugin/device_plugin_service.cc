// The DevicePlugin service of one resource (device_plugin_service.h).
#include "tools/tally_device_plugin/device_plugin_service.h"

#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "tools/tally_device_plugin/container_allocation.h"
#include "tools/tally_device_plugin/container_grants.h"
#include "tools/tally_device_plugin/preferred_allocation.h"

namespace tally::device_plugin {
namespace {

// How often a ListAndWatch stream looks whether the kubelet left or the plugin stops.
constexpr absl::Duration kStreamCheck = absl::Milliseconds(500);

bool SameDevices(const v1beta1::ListAndWatchResponse& a, const v1beta1::ListAndWatchResponse& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

}  // namespace

v1beta1::ListAndWatchResponse DeviceList(const std::vector<GpuState>& gpus,
                                         const PluginConfig& config, ReplicaKind kind) {
  v1beta1::ListAndWatchResponse response;
  for (const GpuState& gpu : gpus) {
    for (int index = 0; index < config.Replicas(kind); ++index) {
      v1beta1::Device* device = response.add_devices();
      device->set_id(FormatReplicaId({gpu.uuid, kind, index}));
      device->set_health(gpu.healthy ? "Healthy" : "Unhealthy");
    }
  }
  return response;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* options) {
  options->set_pre_start_required(false);
  options->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  uint64_t version = fleet_.version();
  v1beta1::ListAndWatchResponse sent = DeviceList(fleet_.Snapshot(), config_, kind_);
  if (!writer->Write(sent)) return grpc::Status::OK;
  while (!context->IsCancelled() && !stopping_) {
    const uint64_t now = fleet_.AwaitChange(version, kStreamCheck);
    if (now == version) continue;
    version = now;
    v1beta1::ListAndWatchResponse devices = DeviceList(fleet_.Snapshot(), config_, kind_);
    if (SameDevices(devices, sent)) continue;
    sent = std::move(devices);
    if (!writer->Write(sent)) break;
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  std::map<std::string, GpuLoad> loads;
  for (const GpuState& gpu : fleet_.Snapshot()) {
    loads[gpu.uuid] = {gpu.high_clients, gpu.high_busy_fraction};
  }
  for (const auto& container : request->container_requests()) {
    const std::vector<std::string> available(container.available_deviceids().begin(),
                                             container.available_deviceids().end());
    const std::vector<std::string> must(container.must_include_deviceids().begin(),
                                        container.must_include_deviceids().end());
    auto* chosen = response->add_container_responses();
    for (std::string& id :
         PreferredAllocation(available, must, container.allocation_size(), kind_, loads)) {
      *chosen->add_deviceids() = std::move(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (const auto& container : request->container_requests()) {
    const grpc::Status status = AllocateContainer(container, *response->add_container_responses());
    if (!status.ok()) {
      TALLY_LOG_WARN("tally-device-plugin: Allocate: {}", status.error_message());
      return status;
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::AllocateContainer(
    const v1beta1::ContainerAllocateRequest& request,
    v1beta1::ContainerAllocateResponse& response) {
  const std::vector<std::string> ids(request.devices_ids().begin(), request.devices_ids().end());
  auto plan = PlanContainer(ids, kind_);
  if (!plan.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(plan.status().message()));
  }
  const std::optional<GpuState> gpu = fleet_.Find(plan->gpu_uuid);
  if (!gpu || !gpu->healthy) {
    return grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrFormat("no Tally server serves %s now (gone, draining or never seen)",
                        plan->gpu_uuid));
  }
  const ipc::ClientCeiling terms{
      plan->grant_name,
      kind_ == ReplicaKind::kHigh ? ClientPriority::High() : ClientPriority::BestEffort(),
      static_cast<uint64_t>(plan->replicas) * config_.ReplicaMemory(kind_, gpu->total_memory),
      ipc::kNoLimit};
  auto grant = MakeContainerGrant(gpu->socket, terms, trust_);
  if (!grant.ok()) {
    return grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrFormat("the Tally server of %s made no grant %s: %s", plan->gpu_uuid,
                        plan->grant_name, grant.status().message()));
  }
  TALLY_LOG_INFO("tally-device-plugin: granted {} on {} ({} replica(s))", plan->grant_name,
                 gpu->socket, plan->replicas);
  response = ContainerResponse(config_, GrantDirectory(*grant), gpu->server_uid);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace tally::device_plugin
