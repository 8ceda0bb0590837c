// The kubelet's pod-resources API as a list of containers' devices (pod_devices.h).
#include "tools/kubelet_api/pod_devices.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "pod_resources.grpc.pb.h"

namespace tally::kubelet {
namespace {

// The kubelet's own clients of this API accept answers up to 16 MiB (gRPC's default is 4 MiB): a
// node with many pods answers more.
constexpr int kMaxAnswerBytes = 16 << 20;

bool UnderPrefix(std::string_view resource, std::string_view prefix) {
  return resource.size() > prefix.size() + 1 && resource.starts_with(prefix) &&
         resource[prefix.size()] == '/';
}

}  // namespace

std::vector<ContainerDevices> ContainerDevicesOf(const v1::ListPodResourcesResponse& response,
                                                 std::string_view resource_prefix) {
  std::vector<ContainerDevices> out;
  for (const v1::PodResources& pod : response.pod_resources()) {
    for (const v1::ContainerResources& container : pod.containers()) {
      const size_t first = out.size();  // this container's entries start here
      for (const v1::ContainerDevices& devices : container.devices()) {
        if (!UnderPrefix(devices.resource_name(), resource_prefix)) continue;
        auto same = std::find_if(out.begin() + first, out.end(), [&](const ContainerDevices& c) {
          return c.resource == devices.resource_name();
        });
        if (same == out.end()) {
          out.push_back(
              {pod.namespace_(), pod.name(), container.name(), devices.resource_name(), {}});
          same = out.end() - 1;
        }
        same->device_ids.insert(same->device_ids.end(), devices.device_ids().begin(),
                                devices.device_ids().end());
      }
      for (auto it = out.begin() + first; it != out.end(); ++it) {
        std::sort(it->device_ids.begin(), it->device_ids.end());
        it->device_ids.erase(std::unique(it->device_ids.begin(), it->device_ids.end()),
                             it->device_ids.end());
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<ContainerDevices>> ListContainerDevices(const std::string& socket_path,
                                                                   std::string_view resource_prefix,
                                                                   absl::Duration timeout) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxAnswerBytes);
  auto channel = grpc::CreateCustomChannel("unix://" + socket_path,
                                           grpc::InsecureChannelCredentials(), arguments);
  auto lister = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  v1::ListPodResourcesResponse response;
  const grpc::Status status = lister->List(&context, v1::ListPodResourcesRequest(), &response);
  if (!status.ok()) {
    // gRPC's status codes are abseil's, number for number.
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat("the kubelet's pod-resources API at ", socket_path,
                                     " (List): ", status.error_message()));
  }
  return ContainerDevicesOf(response, resource_prefix);
}

absl::Status CheckResourcePrefix(std::string_view prefix) {
  if (!prefix.empty() &&
      prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") == std::string::npos) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "a resource prefix is a domain of lowercase letters, digits, '.' and '-' (such as "
      "tally.dev), not '",
      std::string(prefix), "'"));
}

std::string GrantNameOf(std::vector<std::string> device_ids) {
  if (device_ids.empty()) return "";
  return *std::min_element(device_ids.begin(), device_ids.end());
}

}  // namespace tally::kubelet
