// Answers device attributes from the connection's snapshot (ipc/cuda_calls.h).
#include "client/device_attributes.h"

#include <cuda.h>

#include "client/channel.h"
#include "client/status.h"

namespace tally::client {

absl::StatusOr<int> DeviceAttribute(const ipc::GetDeviceInfoResponse& info, int attribute) {
  switch (attribute) {
#define TALLY_ATTRIBUTE_OVERRIDE(name, value) \
  case CU_DEVICE_ATTRIBUTE_##name:            \
    return value;
#include "client/device_attribute_overrides.def"
    default:
      break;
  }
  if (attribute < 0 || static_cast<size_t>(attribute) >= ipc::kDeviceAttributeSlots ||
      info.answered[attribute] == 0) {
    return CudaError(cudaErrorInvalidValue, "the device does not know this attribute");
  }
  return info.attributes[attribute];
}

absl::StatusOr<int> DeviceAttribute(int attribute) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return DeviceAttribute(channel->device(), attribute);
}

}  // namespace tally::client
