// One resource as the kubelet sees it: the DevicePlugin service on its socket in the kubelet's
// directory (tally-gpu-high.sock, tally-gpu-best-effort.sock), and its registration over the
// kubelet's socket.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "tools/tally_device_plugin/device_plugin_service.h"

namespace tally::device_plugin {

class PluginEndpoint {
 public:
  PluginEndpoint(const PluginConfig& config, ReplicaKind kind, const GpuFleet& fleet,
                 ipc::ServerTrust trust)
      : config_(config), kind_(kind), service_(config, kind, fleet, std::move(trust)) {}
  PluginEndpoint(const PluginEndpoint&) = delete;
  PluginEndpoint& operator=(const PluginEndpoint&) = delete;
  ~PluginEndpoint() { Stop(); }

  // "tally-gpu-high.sock": the endpoint registered, relative to the kubelet's directory.
  std::string SocketName() const;
  std::string SocketPath() const;

  // Serves on a new socket (one left at the path is removed first).
  absl::Status Start();
  // Ends the streams and the server (within a few seconds) and removes the socket.
  void Stop();

  // Registers the resource with the kubelet (Registration.Register on kubelet.sock).
  absl::Status Register() const;

 private:
  const PluginConfig& config_;
  const ReplicaKind kind_;
  DevicePluginService service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace tally::device_plugin
