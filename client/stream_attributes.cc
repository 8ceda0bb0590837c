// The attributes of a stream (see stream_attributes.h).
#include "client/stream_attributes.h"

#include <string>

#include "absl/strings/str_format.h"
#include "client/device_attributes.h"
#include "client/status.h"
#include "common/status.h"

namespace tally::client {
namespace {

absl::Status Invalid(const std::string& what) { return CudaError(cudaErrorInvalidValue, what); }

absl::Status CheckSyncPolicy(cudaSynchronizationPolicy policy) {
  if (policy >= cudaSyncPolicyAuto && policy <= cudaSyncPolicyBlockingSync) {
    return absl::OkStatus();
  }
  return Invalid("unknown cudaSynchronizationPolicy");
}

absl::Status CheckMemSyncDomain(int domain) {
  if (domain == cudaLaunchMemSyncDomainDefault || domain == cudaLaunchMemSyncDomainRemote) {
    return absl::OkStatus();
  }
  return Invalid("unknown cudaLaunchMemSyncDomain");
}

absl::Status UnknownAttribute(cudaLaunchAttributeID id) {
  return Invalid(absl::StrFormat("launch attribute %d is no stream attribute", int{id}));
}

}  // namespace

absl::Status CheckAccessPolicyWindow(const cudaAccessPolicyWindow& window) {
  if (!(window.hitRatio >= 0.0f && window.hitRatio <= 1.0f)) {
    return Invalid("access policy window hitRatio outside [0, 1]");
  }
  TALLY_ASSIGN_OR_RETURN(const int max_window,
                         DeviceAttribute(cudaDevAttrMaxAccessPolicyWindowSize));
  if (window.num_bytes > static_cast<size_t>(max_window)) {
    return Invalid(absl::StrFormat("access policy window of %u bytes, above the device's %d",
                                   window.num_bytes, max_window));
  }
  const auto known = [](cudaAccessProperty p) {
    return p == cudaAccessPropertyNormal || p == cudaAccessPropertyStreaming ||
           p == cudaAccessPropertyPersisting;
  };
  if (!known(window.hitProp) || !known(window.missProp) ||
      window.missProp == cudaAccessPropertyPersisting) {
    return Invalid("access policy window hitProp or missProp not a valid cudaAccessProperty");
  }
  return absl::OkStatus();
}

absl::Status SetStreamAttribute(StreamAttributes& attributes, StreamPriority priority,
                                cudaLaunchAttributeID id, const cudaLaunchAttributeValue& value) {
  switch (id) {
    case cudaLaunchAttributeAccessPolicyWindow:
      TALLY_RETURN_IF_ERROR(CheckAccessPolicyWindow(value.accessPolicyWindow));
      attributes.access_policy_window = value.accessPolicyWindow;
      return absl::OkStatus();
    case cudaLaunchAttributeSynchronizationPolicy:
      TALLY_RETURN_IF_ERROR(CheckSyncPolicy(value.syncPolicy));
      attributes.sync_policy = value.syncPolicy;
      return absl::OkStatus();
    case cudaLaunchAttributeMemSyncDomainMap:
      attributes.mem_sync_domain_map = value.memSyncDomainMap;
      return absl::OkStatus();
    case cudaLaunchAttributeMemSyncDomain:
      TALLY_RETURN_IF_ERROR(CheckMemSyncDomain(value.memSyncDomain));
      attributes.mem_sync_domain = value.memSyncDomain;
      return absl::OkStatus();
    case cudaLaunchAttributePriority:
      if (value.priority == priority.value()) return absl::OkStatus();
      return CudaError(cudaErrorNotSupported,
                       "a stream's priority is fixed at its creation under Tally");
    default:
      return UnknownAttribute(id);
  }
}

absl::Status GetStreamAttribute(const StreamAttributes& attributes, StreamPriority priority,
                                cudaLaunchAttributeID id, cudaLaunchAttributeValue& value) {
  switch (id) {
    case cudaLaunchAttributeAccessPolicyWindow:
      value.accessPolicyWindow = attributes.access_policy_window;
      return absl::OkStatus();
    case cudaLaunchAttributeSynchronizationPolicy:
      value.syncPolicy = attributes.sync_policy;
      return absl::OkStatus();
    case cudaLaunchAttributeMemSyncDomainMap:
      value.memSyncDomainMap = attributes.mem_sync_domain_map;
      return absl::OkStatus();
    case cudaLaunchAttributeMemSyncDomain:
      value.memSyncDomain = attributes.mem_sync_domain;
      return absl::OkStatus();
    case cudaLaunchAttributePriority:
      value.priority = priority.value();
      return absl::OkStatus();
    default:
      return UnknownAttribute(id);
  }
}

}  // namespace tally::client
