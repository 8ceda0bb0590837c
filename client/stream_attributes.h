// The attributes of a stream (CUDA Runtime API, cudaStreamSetAttribute; the ids and the value
// union are the launch attributes', cudaLaunchAttributeID / cudaLaunchAttributeValue, which
// coincide with the driver's CUlaunchAttributeID / CUlaunchAttributeValue). They are kept in the
// shim and reported back, not applied to the server's stream: the access policy window, the
// synchronisation policy and the memory synchronisation domains are performance hints (results
// never depend on them, as for cudaLaunchKernelExC's), and persisting L2 lines would take the L2
// cache from the other clients sharing the device.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "common/stream_priority.h"

namespace tally::client {

// A new stream's attributes, CUDA's defaults (no window, automatic synchronisation, default
// domain mapped to 0 and remote to 1).
struct StreamAttributes {
  cudaAccessPolicyWindow access_policy_window{};
  cudaSynchronizationPolicy sync_policy = cudaSyncPolicyAuto;
  cudaLaunchMemSyncDomainMap mem_sync_domain_map{.default_ = 0, .remote = 1};
  cudaLaunchMemSyncDomain mem_sync_domain = cudaLaunchMemSyncDomainDefault;
};

// cudaErrorInvalidValue unless hitRatio is in [0, 1], num_bytes at most the device's
// cudaDevAttrMaxAccessPolicyWindowSize, hitProp a cudaAccessProperty and missProp normal or
// streaming (CUDA Runtime API, cudaAccessPolicyWindow).
absl::Status CheckAccessPolicyWindow(const cudaAccessPolicyWindow& window);

// Sets one attribute after checking its value. The priority is the stream's own (fixed at
// creation, when the server made the stream): setting another is cudaErrorNotSupported.
absl::Status SetStreamAttribute(StreamAttributes& attributes, StreamPriority priority,
                                cudaLaunchAttributeID id, const cudaLaunchAttributeValue& value);
// Reads one attribute; cudaErrorInvalidValue for an id that is no stream attribute.
absl::Status GetStreamAttribute(const StreamAttributes& attributes, StreamPriority priority,
                                cudaLaunchAttributeID id, cudaLaunchAttributeValue& value);

}  // namespace tally::client
