// Replicas' device IDs (replica_id.h).
#include "tools/tally_device_plugin/replica_id.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/device_uuid.h"

namespace tally::device_plugin {

const char* KindName(ReplicaKind kind) {
  return kind == ReplicaKind::kHigh ? "high" : "best-effort";
}

std::string FormatReplicaId(const ReplicaId& id) {
  return absl::StrCat(id.gpu_uuid, "-", KindName(id.kind), "-", id.index);
}

absl::StatusOr<ReplicaId> ParseReplicaId(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not a Tally device ID (%s)", text, why));
  };
  // A UUID has no "-high-" or "-best-effort-" in it: the kind is the last such part.
  for (const ReplicaKind kind : {ReplicaKind::kHigh, ReplicaKind::kBestEffort}) {
    const std::string marker = absl::StrCat("-", KindName(kind), "-");
    const size_t at = text.rfind(marker);
    if (at == std::string_view::npos) continue;
    ReplicaId id;
    id.gpu_uuid = std::string(text.substr(0, at));
    id.kind = kind;
    const std::string_view index = text.substr(at + marker.size());
    if (index.empty() || index.find_first_not_of("0123456789") != std::string_view::npos ||
        !absl::SimpleAtoi(std::string(index), &id.index)) {
      return bad("its replica number is not one");
    }
    const auto uuid = ParseDeviceUuid(id.gpu_uuid);
    if (!uuid.ok() || FormatDeviceUuid(*uuid) != id.gpu_uuid) return bad("no GPU UUID before it");
    return id;
  }
  return bad("neither -high-N nor -best-effort-N");
}

}  // namespace tally::device_plugin
