// A GPU's UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), and the
// device selectors of tally-server --device and tally-run --device: an ordinal or a UUID.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally {

using DeviceUuid = std::array<uint8_t, 16>;

// "GPU-" and the 16 bytes in lowercase hex, grouped 8-4-4-4-12.
std::string FormatDeviceUuid(const DeviceUuid& uuid);

// The inverse of FormatDeviceUuid, with or without "GPU-", in either case; InvalidArgument for
// anything else.
absl::StatusOr<DeviceUuid> ParseDeviceUuid(std::string_view text);

// A device named by its ordinal or its UUID (exactly one is set).
struct DeviceSelector {
  std::optional<int> ordinal;
  std::optional<DeviceUuid> uuid;
  friend bool operator==(const DeviceSelector&, const DeviceSelector&) = default;
};

// "1" (a non-negative ordinal) or a UUID as ParseDeviceUuid takes it.
absl::StatusOr<DeviceSelector> ParseDeviceSelector(std::string_view text);

}  // namespace tally
