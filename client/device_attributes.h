// The device's attributes as the application sees them: the server's snapshot of every
// attribute of cuda.h, with the few that Tally changes (device_attribute_overrides.def).
#pragma once

#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"

namespace tally::client {

// CUdevice_attribute (= cudaDeviceAttr) `attribute` of the device `info` describes;
// cudaErrorInvalidValue for a value that is no attribute or that the device did not answer.
absl::StatusOr<int> DeviceAttribute(const ipc::GetDeviceInfoResponse& info, int attribute);

// The connected device's attribute (Channel::Get()'s snapshot).
absl::StatusOr<int> DeviceAttribute(int attribute);

}  // namespace tally::client
