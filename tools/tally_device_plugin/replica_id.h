// The device IDs the plugin advertises: replicas of a GPU, `<GPU uuid>-high-<n>` for the
// resource gpu-high and `<GPU uuid>-best-effort-<n>` for gpu-best-effort, n from 0.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally::device_plugin {

// Which of the plugin's two resources a replica belongs to.
enum class ReplicaKind { kHigh, kBestEffort };

// "high" or "best-effort": in device IDs, resource names and socket names.
const char* KindName(ReplicaKind kind);

struct ReplicaId {
  std::string gpu_uuid;  // as the server reports it (FormatDeviceUuid: GPU-xxxxxxxx-...)
  ReplicaKind kind = ReplicaKind::kHigh;
  int index = 0;
  friend bool operator==(const ReplicaId&, const ReplicaId&) = default;
};

// The kubelet takes device IDs of at most 63 characters; ours are at most 40 + 13 + digits.
inline constexpr size_t kMaxDeviceIdSize = 63;

std::string FormatReplicaId(const ReplicaId& id);

// The inverse of FormatReplicaId; InvalidArgument naming `text` for anything else (a GPU UUID
// not in FormatDeviceUuid's form, another kind, an index that is not a decimal number).
absl::StatusOr<ReplicaId> ParseReplicaId(std::string_view text);

}  // namespace tally::device_plugin
