// The kubelet's DevicePlugin service for one of the two resources (gpu-high or
// gpu-best-effort), served on its own socket (plugin_endpoint.h).
#pragma once

#include <atomic>
#include <vector>

#include "device_plugin.grpc.pb.h"
#include "ipc/peer_access.h"
#include "tools/tally_device_plugin/gpu_fleet.h"
#include "tools/tally_device_plugin/plugin_config.h"
#include "tools/tally_device_plugin/replica_id.h"

namespace tally::device_plugin {

// The replicas of `kind` of every GPU known, Healthy when its server is.
v1beta1::ListAndWatchResponse DeviceList(const std::vector<GpuState>& gpus,
                                         const PluginConfig& config, ReplicaKind kind);

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(const PluginConfig& config, ReplicaKind kind, const GpuFleet& fleet,
                      ipc::ServerTrust trust)
      : config_(config), kind_(kind), fleet_(fleet), trust_(std::move(trust)) {}

  // Ends the ListAndWatch streams within a second (before the server shuts down); Resume lets
  // new ones run.
  void StopStreams() { stopping_ = true; }
  void Resume() { stopping_ = false; }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* options) override;
  // The device list at once, then again whenever a GPU's health changes.
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  // A grant per container (container_allocation.h): INVALID_ARGUMENT for replicas that cannot
  // be served together, UNAVAILABLE when their GPU's server is gone or draining or refuses.
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  grpc::Status AllocateContainer(const v1beta1::ContainerAllocateRequest& request,
                                 v1beta1::ContainerAllocateResponse& response);

  const PluginConfig& config_;
  const ReplicaKind kind_;
  const GpuFleet& fleet_;
  const ipc::ServerTrust trust_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tally::device_plugin
