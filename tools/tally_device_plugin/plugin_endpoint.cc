// One resource's socket and registration (plugin_endpoint.h).
#include "tools/tally_device_plugin/plugin_endpoint.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tally::device_plugin {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(2);
constexpr auto kRegisterTimeout = std::chrono::seconds(5);

}  // namespace

std::string PluginEndpoint::SocketName() const {
  return absl::StrCat("tally-gpu-", KindName(kind_), ".sock");
}

std::string PluginEndpoint::SocketPath() const {
  return absl::StrCat(config_.kubelet_dir, "/", SocketName());
}

absl::Status PluginEndpoint::Start() {
  Stop();
  const std::string path = SocketPath();
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrFormat("unlink(%s): %s", path, std::strerror(errno)));
  }
  service_.Resume();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("unix:", path), grpc::InsecureServerCredentials());
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(absl::StrFormat("cannot serve gRPC on %s", path));
  }
  return absl::OkStatus();
}

void PluginEndpoint::Stop() {
  if (server_ == nullptr) return;
  service_.StopStreams();
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  server_.reset();
  unlink(SocketPath().c_str());
}

absl::Status PluginEndpoint::Register() const {
  const std::string kubelet = absl::StrCat("unix://", config_.kubelet_dir, "/kubelet.sock");
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel(kubelet, grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint(SocketName());
  request.set_resource_name(config_.ResourceName(kind_));
  request.mutable_options()->set_get_preferred_allocation_available(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRegisterTimeout);
  v1beta1::Empty reply;
  const grpc::Status status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrFormat("registering %s with the kubelet (%s): %s",
                                                  request.resource_name(), kubelet,
                                                  status.error_message()));
  }
  return absl::OkStatus();
}

}  // namespace tally::device_plugin
