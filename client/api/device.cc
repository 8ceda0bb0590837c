// Device management, runtime and driver API. The server serves one device, so the application
// sees device 0 only; everything but synchronisation is answered from the snapshot fetched at
// connection.
//
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuDeviceGetUuid and cuDeviceGetUuid_v2 apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "client/capture.h"
#include "client/channel.h"
#include "client/copy.h"
#include "client/device_attributes.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/host_blocks.h"
#include "client/kernels.h"
#include "client/streams.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckDevice;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DeviceAttribute;
using tally::client::DeviceRanges;
using tally::client::DriverError;
using tally::client::HostBlocks;
using tally::client::KernelRegistry;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::Streams;
namespace ipc = tally::ipc;

namespace {

// cudaDeviceGetAttribute and cuDeviceGetAttribute (cudaDeviceAttr and CUdevice_attribute share
// their values, driver_types.h and cuda.h).
absl::Status GetAttribute(int* value, int attribute, int device) {
  TALLY_RETURN_IF_ERROR(CheckOut(value));
  TALLY_RETURN_IF_ERROR(CheckDevice(device));
  TALLY_ASSIGN_OR_RETURN(*value, DeviceAttribute(attribute));
  return absl::OkStatus();
}

// The device snapshot, for device `device`.
absl::StatusOr<const ipc::GetDeviceInfoResponse*> DeviceInfo(int device) {
  TALLY_RETURN_IF_ERROR(CheckDevice(device));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return &channel->device();
}

absl::Status GetUuid(CUuuid* uuid, CUdevice device) {
  TALLY_RETURN_IF_ERROR(CheckOut(uuid));
  TALLY_ASSIGN_OR_RETURN(const ipc::GetDeviceInfoResponse* info, DeviceInfo(device));
  std::memcpy(uuid->bytes, info->uuid, sizeof(uuid->bytes));
  return absl::OkStatus();
}

// Limits are the server context's as this client set them (server/handlers/device.cc);
// cudaLimit and CUlimit share their values.
absl::Status SetLimit(int limit, size_t value) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel
      ->Call(ipc::DeviceSetLimitRequest{.limit = static_cast<uint32_t>(limit), .value = value})
      .status();
}

absl::Status GetLimit(size_t* value, int limit) {
  TALLY_RETURN_IF_ERROR(CheckOut(value));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer,
      channel->Call(ipc::DeviceGetLimitRequest{.limit = static_cast<uint32_t>(limit)}));
  *value = answer.fields.value;
  return absl::OkStatus();
}

// The runtime's device selection is per host thread (CUDA Runtime API, cudaSetDevice); with a
// single device only 0 is valid, so nothing needs remembering.

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(count));
    // Without a server there is no device: cudaErrorNoDevice, as CUDA answers on a machine
    // without a GPU.
    const absl::StatusOr<Channel*> channel = Channel::Get();
    *count = channel.ok() ? 1 : 0;
    if (!channel.ok()) return CudaError(cudaErrorNoDevice, channel.status().message());
    return absl::OkStatus();
  });
}

cudaError_t cudaGetDevice(int* device) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(device));
    *device = 0;
    return absl::OkStatus();
  });
}

cudaError_t cudaSetDevice(int device) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    return Channel::Get().status();
  });
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(prop));
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    const ipc::GetDeviceInfoResponse& info = channel->device();
    std::memset(prop, 0, sizeof(*prop));
    std::memcpy(prop->name, info.name, sizeof(prop->name) - 1);
    std::memcpy(prop->uuid.bytes, info.uuid, sizeof(prop->uuid.bytes));
    prop->totalGlobalMem = info.total_memory;
    // Every other field is its attribute's answer, so that the two always agree; a field whose
    // attribute the device did not answer stays 0.
    const auto attribute = [&](CUdevice_attribute which) {
      return DeviceAttribute(info, which).value_or(0);
    };
#define TALLY_DEVICE_PROP(field, name) \
  prop->field = static_cast<decltype(prop->field)>(attribute(CU_DEVICE_ATTRIBUTE_##name));
#define TALLY_DEVICE_PROP_ELEMENT(field, index, name) \
  prop->field[index] = attribute(CU_DEVICE_ATTRIBUTE_##name);
#include "client/device_props.def"
    return absl::OkStatus();
  });
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    return GetAttribute(value, static_cast<int>(attr), device);
  });
}

// Flags (cudaDeviceScheduleSpin, ...) choose how the host waits; the shim always spins then
// sleeps on the rings, so they are only remembered for cudaGetDeviceFlags. cudaDeviceMapHost
// is always reported: the device can map host memory in the CUDA sense of the flag.
std::atomic<unsigned int> device_flags{cudaDeviceMapHost};

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    device_flags = flags | cudaDeviceMapHost;
    return absl::OkStatus();
  });
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    *flags = device_flags;
    return absl::OkStatus();
  });
}

// The runtime this shim implements (the toolkit it was built against).
cudaError_t cudaRuntimeGetVersion(int* version) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(version));
    *version = CUDART_VERSION;
    return absl::OkStatus();
  });
}

// The server's driver (for the emulator, the CUDA version it implements).
cudaError_t cudaDriverGetVersion(int* version) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(version));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    *version = channel->device().driver_version;
    return absl::OkStatus();
  });
}

cudaError_t cudaDeviceSynchronize() {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(tally::client::CheckUnsafeCall());
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel->Call(ipc::DeviceSynchronizeRequest{}).status();
  });
}

// cudaDeviceReset (CUDA Runtime API): the server finishes the client's work and destroys its
// streams, events, memory and page-locked blocks (server/handlers/device.cc); the shim then
// forgets those ranges and streams. Registered kernels and variables stay resolved, since their
// modules stay loaded: as after CUDA's reset, they remain usable; managed variables get new
// memory with their initial values. As in CUDA, no other thread may
// be using the device meanwhile.
cudaError_t cudaDeviceReset() {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    TALLY_RETURN_IF_ERROR(channel->Call(ipc::DeviceResetRequest{}).status());
    HostBlocks::Get().Reset();
    DeviceRanges::Get().RemoveAllocations();
    Streams::Get().Clear();
    return KernelRegistry::Get().PlaceManagedVariablesAgain();
  });
}

cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  return RuntimeCall(__func__, [&] { return SetLimit(limit, value); });
}

cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  return RuntimeCall(__func__, [&] { return GetLimit(value, limit); });
}

// The current context's limits: every context of the client shares the server's.
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return DriverCall(__func__, [&] { return SetLimit(limit, value); });
}

CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  return DriverCall(__func__, [&] { return GetLimit(value, limit); });
}

// Driver API (CUDA Driver API, "Device Management"): CUdevice 0 is the server's device.

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(device));
    TALLY_RETURN_IF_ERROR(CheckDevice(ordinal));
    *device = 0;
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetCount(int* count) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(count));
    *count = 1;
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(name));
    if (length <= 0) return DriverError(CUDA_ERROR_INVALID_VALUE, "name length must be positive");
    TALLY_ASSIGN_OR_RETURN(const ipc::GetDeviceInfoResponse* info, DeviceInfo(device));
    const size_t n = strnlen(info->name, sizeof(info->name));
    const size_t copied = std::min(n, static_cast<size_t>(length) - 1);
    std::memcpy(name, info->name, copied);
    name[copied] = '\0';
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  return DriverCall(__func__, [&] { return GetAttribute(value, attribute, device); });
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(bytes));
    TALLY_ASSIGN_OR_RETURN(const ipc::GetDeviceInfoResponse* info, DeviceInfo(device));
    *bytes = info->total_memory;
    return absl::OkStatus();
  });
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  return DriverCall(__func__, [&] { return GetUuid(uuid, device); });
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  return DriverCall(__func__, [&] { return GetUuid(uuid, device); });
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(
        GetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    return GetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  });
}

}  // extern "C"
