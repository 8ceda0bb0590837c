// Kernel launches: cudaLaunchKernel, what `<<<>>>` compiles to in CUDA 13
// (crt/host_runtime.h's __cudaLaunch: __cudaPushCallConfiguration at the call site, then in the
// stub __cudaGetKernel once, __cudaPopCallConfiguration and __cudaLaunchKernel), cooperative
// and attributed launches, and the driver API's forms of them (cuLaunchKernel,
// cuLaunchCooperativeKernel, cuLaunchKernelEx). Arguments are packed with the layout the server
// derived from the kernel's PTX and posted one-way.
#include "client/launch.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/capture.h"
#include "client/channel.h"
#include "client/device_attributes.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "client/library_calls.h"
#include "client/stream_attributes.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DeviceAttribute;
using tally::client::DriverError;
using tally::client::DriverFunction;
using tally::client::DriverParams;
using tally::client::Kernel;
using tally::client::KernelRegistry;
using tally::client::LaunchOptions;
using tally::client::LaunchOptionsOf;
using tally::client::PackArguments;
using tally::client::PostLaunch;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::StreamHandle;
namespace ipc = tally::ipc;

namespace {

struct CallConfiguration {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
};

// Configurations pushed by `<<<>>>` and popped by the stub it calls, per thread (launches on
// different threads interleave).
thread_local std::vector<CallConfiguration> configurations;

// The parameter buffer of the calling thread, reused by its launches: no allocation per launch.
thread_local std::vector<std::byte> param_buffer;

// A launch is one-way, so whatever makes CUDA refuse it at the call is checked here, against the
// device's limits and the kernel's attributes as the server reported them (CUDA Runtime API,
// cudaLaunchKernel and "Error Handling"; CUDA Driver API, cuLaunchKernel). The runtime's codes;
// a driver entry point reports each as ToCuResult maps it (CUDA_ERROR_INVALID_VALUE, or
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, which shares its value).
//  - a block or grid dimension of 0 or above the device's maximum, or more threads per block
//    than the device has: cudaErrorInvalidConfiguration ("requesting too many threads or
//    blocks");
//  - more threads than the kernel can run with (its registers, __launch_bounds__, .maxntid):
//    cudaErrorLaunchOutOfResources ("too many threads for the kernel's register count");
//  - more shared memory than any block of the device can have (static plus dynamic above
//    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN): cudaErrorInvalidConfiguration
//    ("requesting more shared memory per block than the device supports");
//  - more dynamic shared memory than the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
//    (48 KiB less its static shared memory unless cudaFuncSetAttribute raised it):
//    cudaErrorInvalidValue, the driver's CUDA_ERROR_INVALID_VALUE for it.
absl::Status CheckConfiguration(const ipc::GetDeviceInfoResponse& device, const Kernel& kernel,
                                ipc::Dim3 grid, ipc::Dim3 block, size_t shared_bytes) {
  const auto limit = [&](CUdevice_attribute attribute) {
    return DeviceAttribute(device, attribute);
  };
  constexpr CUdevice_attribute kBlockLimits[] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                                 CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                                 CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  constexpr CUdevice_attribute kGridLimits[] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                                CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                                CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  const uint32_t block_dims[] = {block.x, block.y, block.z};
  const uint32_t grid_dims[] = {grid.x, grid.y, grid.z};
  for (int i = 0; i < 3; ++i) {
    TALLY_ASSIGN_OR_RETURN(const int block_limit, limit(kBlockLimits[i]));
    TALLY_ASSIGN_OR_RETURN(const int grid_limit, limit(kGridLimits[i]));
    if (block_dims[i] == 0 || block_dims[i] > static_cast<uint32_t>(block_limit) ||
        grid_dims[i] == 0 || grid_dims[i] > static_cast<uint32_t>(grid_limit)) {
      return CudaError(
          cudaErrorInvalidConfiguration,
          absl::StrFormat("%s<<<(%d, %d, %d), (%d, %d, %d)>>>: a dimension is 0 or "
                          "above the device's limit",
                          kernel.name, grid.x, grid.y, grid.z, block.x, block.y, block.z));
    }
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  TALLY_ASSIGN_OR_RETURN(const int device_threads,
                         limit(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  if (threads > static_cast<uint64_t>(device_threads)) {
    return CudaError(cudaErrorInvalidConfiguration,
                     absl::StrFormat("%s: %d threads per block, the device has at most %d",
                                     kernel.name, threads, device_threads));
  }
  if (threads > static_cast<uint64_t>(kernel.max_threads_per_block)) {
    return CudaError(cudaErrorLaunchOutOfResources,
                     absl::StrFormat("%s: %d threads per block, the kernel runs at most %d",
                                     kernel.name, threads, kernel.max_threads_per_block));
  }
  TALLY_ASSIGN_OR_RETURN(const int device_shared,
                         limit(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  if (shared_bytes + static_cast<uint64_t>(kernel.static_shared_bytes) >
      static_cast<uint64_t>(device_shared)) {
    return CudaError(cudaErrorInvalidConfiguration,
                     absl::StrFormat("%s: %d bytes of shared memory per block (%d dynamic), the "
                                     "device has at most %d",
                                     kernel.name, shared_bytes + kernel.static_shared_bytes,
                                     shared_bytes, device_shared));
  }
  const int32_t max_dynamic = kernel.max_dynamic_shared_bytes.load(std::memory_order_relaxed);
  if (shared_bytes > static_cast<uint64_t>(std::max(max_dynamic, 0))) {
    return CudaError(cudaErrorInvalidValue,
                     absl::StrFormat("%s: %d bytes of dynamic shared memory, the kernel may use "
                                     "%d (cudaFuncSetAttribute's "
                                     "cudaFuncAttributeMaxDynamicSharedMemorySize raises it)",
                                     kernel.name, shared_bytes, max_dynamic));
  }
  return absl::OkStatus();
}

// Cluster dimensions given at the launch, checked where CUDA checks them at the call (the
// launch is one-way; the driver still checks the size against the kernel's limits): a device
// without clusters refuses them, and they must divide the grid (CUDA C++ Programming Guide,
// "Thread Block Clusters").
absl::Status CheckCluster(const ipc::GetDeviceInfoResponse& device, ipc::Dim3 cluster,
                          ipc::Dim3 grid) {
  TALLY_ASSIGN_OR_RETURN(const int major,
                         DeviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  if (major < 9) {
    return CudaError(cudaErrorNotSupported, "thread-block clusters need compute capability 9.0");
  }
  if (cluster.x == 0 || cluster.y == 0 || cluster.z == 0 || grid.x % cluster.x != 0 ||
      grid.y % cluster.y != 0 || grid.z % cluster.z != 0) {
    return CudaError(cudaErrorInvalidClusterSize,
                     absl::StrFormat("cluster %dx%dx%d does not divide the grid %dx%dx%d",
                                     cluster.x, cluster.y, cluster.z, grid.x, grid.y, grid.z));
  }
  return absl::OkStatus();
}

}  // namespace

namespace tally::client {

absl::Status PostLaunch(const Kernel& kernel, ipc::Dim3 grid, ipc::Dim3 block, size_t shared_bytes,
                        cudaStream_t stream, std::span<const std::byte> params,
                        const LaunchOptions& options) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(CheckConfiguration(channel->device(), kernel, grid, block, shared_bytes));
  if (options.cluster.x != 0 || options.cluster.y != 0 || options.cluster.z != 0) {
    TALLY_RETURN_IF_ERROR(CheckCluster(channel->device(), options.cluster, grid));
  }
  // The library call it begins: a replayed node's own, else the calling thread's, if any.
  LaunchOptions tagged = options;
  if (tagged.library_call == ipc::Library::kNone) tagged.library_call = TakeLibraryCall();
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureWork(stream, [&] {
                           KernelWork work;
                           work.launch = {.kernel = &kernel,
                                          .grid = grid,
                                          .block = block,
                                          .shared_bytes = shared_bytes,
                                          .params = {params.begin(), params.end()},
                                          .options = tagged};
                           work.function = kernel.host_function != nullptr
                                               ? kernel.host_function
                                               : static_cast<const void*>(&kernel);
                           return NodeWork(std::move(work));
                         }));
  if (captured) return absl::OkStatus();
  return channel->Post(ipc::LaunchKernelRequest{.grid = grid,
                                                .block = block,
                                                .shared_bytes = static_cast<uint32_t>(shared_bytes),
                                                .flags = options.flags,
                                                .function = kernel.function,
                                                .stream = StreamHandle(stream),
                                                .cluster = options.cluster,
                                                .library_call = static_cast<uint32_t>(
                                                    tagged.library_call)},
                       params);
}

absl::Status PackArguments(const Kernel& kernel, void* const* args,
                           std::vector<std::byte>& buffer) {
  if (!kernel.params.empty() && args == nullptr) {
    return CudaError(cudaErrorInvalidValue, "kernel arguments missing");
  }
  buffer.assign(kernel.param_buffer_size, std::byte{0});
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    std::memcpy(buffer.data() + kernel.params[i].offset, args[i], kernel.params[i].size);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::span<const std::byte>> PackedParams(const Kernel& kernel, void** extra) {
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (void** option = extra; *option != CU_LAUNCH_PARAM_END; option += 2) {
    if (*option == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = option[1];
    } else if (*option == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(option[1]);
    } else {
      return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown cuLaunchKernel extra option");
    }
  }
  if (kernel.param_buffer_size == 0) return std::span<const std::byte>();
  if (buffer == nullptr || size == nullptr) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "extra lacks the parameter buffer or its size");
  }
  if (*size < kernel.param_buffer_size) {
    return DriverError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("a %d-byte parameter buffer for %s, which takes %d", *size,
                                       kernel.name, kernel.param_buffer_size));
  }
  return std::span(static_cast<const std::byte*>(buffer), kernel.param_buffer_size);
}

absl::StatusOr<std::span<const std::byte>> DriverParams(const Kernel& kernel, void** kernel_params,
                                                        void** extra,
                                                        std::vector<std::byte>& buffer) {
  if (extra == nullptr) {
    TALLY_RETURN_IF_ERROR(PackArguments(kernel, kernel_params, buffer));
    return std::span<const std::byte>(buffer);
  }
  if (kernel_params != nullptr) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "both kernelParams and extra given");
  }
  return PackedParams(kernel, extra);
}

}  // namespace tally::client

namespace {

// `args` holds one pointer per parameter, packed into the thread's buffer.
absl::Status PostWithArgs(const Kernel& kernel, ipc::Dim3 grid, ipc::Dim3 block,
                          size_t shared_bytes, cudaStream_t stream, void** args,
                          const LaunchOptions& options = {}) {
  TALLY_RETURN_IF_ERROR(PackArguments(kernel, args, param_buffer));
  return PostLaunch(kernel, grid, block, shared_bytes, stream, param_buffer, options);
}

absl::Status Launch(Kernel& kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                    cudaStream_t stream, const LaunchOptions& options = {}) {
  TALLY_RETURN_IF_ERROR(KernelRegistry::Get().Resolve(kernel));
  return PostWithArgs(kernel, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, shared_bytes,
                      stream, args, options);
}

// A cooperative launch needs every block resident at once: cudaErrorCooperativeLaunchTooLarge
// (= CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) when the grid exceeds what the device holds (CUDA
// Runtime API, cudaLaunchCooperativeKernel). `kernel` is resolved.
absl::Status CheckCooperative(const Kernel& kernel, ipc::Dim3 grid, ipc::Dim3 block,
                              size_t shared_bytes) {
  TALLY_ASSIGN_OR_RETURN(const int cooperative,
                         DeviceAttribute(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH));
  if (cooperative == 0) {
    return CudaError(cudaErrorNotSupported, "the device does not support cooperative launches");
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(CheckConfiguration(channel->device(), kernel, grid, block, shared_bytes));
  TALLY_ASSIGN_OR_RETURN(const int multiprocessors,
                         DeviceAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  TALLY_ASSIGN_OR_RETURN(auto occupancy, channel->Call(ipc::OccupancyRequest{
                                             .block_size = static_cast<int32_t>(threads),
                                             .function = kernel.function,
                                             .dynamic_shared_bytes = shared_bytes}));
  const uint64_t resident =
      uint64_t(occupancy.fields.blocks_per_multiprocessor) * uint64_t(multiprocessors);
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (blocks > resident) {
    return CudaError(
        cudaErrorCooperativeLaunchTooLarge,
        absl::StrFormat("%d blocks, but at most %d can be resident at once", blocks, resident));
  }
  return absl::OkStatus();
}

// `options` of a cooperative launch (cluster dimensions too, from cudaLaunchKernelExC).
absl::Status LaunchCooperative(Kernel& kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream,
                               const LaunchOptions& options = {.flags = ipc::kLaunchCooperative}) {
  TALLY_RETURN_IF_ERROR(KernelRegistry::Get().Resolve(kernel));
  TALLY_RETURN_IF_ERROR(CheckCooperative(kernel, {grid.x, grid.y, grid.z},
                                         {block.x, block.y, block.z}, shared_bytes));
  return Launch(kernel, grid, block, args, shared_bytes, stream, options);
}

// The runtime's and the driver's launch attributes are one enumeration (cudaLaunchAttributeID
// and CUlaunchAttributeID, driver_types.h and cuda.h) with values of one layout.
static_assert(int{cudaLaunchAttributeCooperative} == int{CU_LAUNCH_ATTRIBUTE_COOPERATIVE});
static_assert(int{cudaLaunchAttributePriority} == int{CU_LAUNCH_ATTRIBUTE_PRIORITY});
static_assert(int{cudaLaunchAttributeClusterDimension} ==
              int{CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION});
static_assert(int{cudaLaunchAttributePreferredSharedMemoryCarveout} ==
              int{CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT});
static_assert(int{cudaLaunchAttributeNvlinkUtilCentricScheduling} ==
              int{CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING});
const cudaLaunchAttributeValue& ValueOf(const cudaLaunchAttribute& attribute) {
  return attribute.val;
}
const CUlaunchAttributeValue& ValueOf(const CUlaunchAttribute& attribute) {
  return attribute.value;
}

// An access policy window checked as a stream attribute's (CUaccessPolicyWindow and
// cudaAccessPolicyWindow share their layout).
template <typename Window>
absl::Status CheckWindow(const Window& window) {
  static_assert(sizeof(Window) == sizeof(cudaAccessPolicyWindow));
  cudaAccessPolicyWindow as_runtime;
  std::memcpy(&as_runtime, &window, sizeof as_runtime);
  return tally::client::CheckAccessPolicyWindow(as_runtime);
}

// The launch attributes of cudaLaunchKernelExC and cuLaunchKernelEx: cooperative and cluster
// dimensions are honoured, performance hints are ignored (they never change results),
// attributes whose semantics Tally does not provide are cudaErrorNotSupported, and ids the
// headers do not know are cudaErrorInvalidValue.
template <typename Attribute>
absl::StatusOr<LaunchOptions> OptionsOf(const Attribute* attributes, unsigned count) {
  if (count > 0 && attributes == nullptr) {
    return CudaError(cudaErrorInvalidValue, "numAttrs > 0 with null attrs");
  }
  LaunchOptions options;
  for (unsigned i = 0; i < count; ++i) {
    const auto& value = ValueOf(attributes[i]);
    const int id = static_cast<int>(attributes[i].id);
    switch (id) {
      case cudaLaunchAttributeCooperative:
        if (value.cooperative != 0) options.flags |= ipc::kLaunchCooperative;
        break;
      case cudaLaunchAttributeAccessPolicyWindow:
        TALLY_RETURN_IF_ERROR(CheckWindow(value.accessPolicyWindow));
        break;
      case cudaLaunchAttributeIgnore:
      case cudaLaunchAttributePriority:
      case cudaLaunchAttributeMemSyncDomainMap:
      case cudaLaunchAttributeMemSyncDomain:
      case cudaLaunchAttributePreferredSharedMemoryCarveout:
      case cudaLaunchAttributeNvlinkUtilCentricScheduling:
        break;
      case cudaLaunchAttributeClusterDimension:
        // Checked by CheckCluster; a cluster of one block is no cluster.
        if (uint64_t{value.clusterDim.x} * value.clusterDim.y * value.clusterDim.z != 1) {
          options.cluster = {value.clusterDim.x, value.clusterDim.y, value.clusterDim.z};
        }
        break;
      case cudaLaunchAttributeSynchronizationPolicy:
      case cudaLaunchAttributeClusterSchedulingPolicyPreference:
      case cudaLaunchAttributeProgrammaticStreamSerialization:
      case cudaLaunchAttributeProgrammaticEvent:
      case cudaLaunchAttributePreferredClusterDimension:
      case cudaLaunchAttributeLaunchCompletionEvent:
      case cudaLaunchAttributeDeviceUpdatableKernelNode:
        return CudaError(cudaErrorNotSupported,
                         absl::StrFormat("launch attribute %d is not supported by Tally", id));
      default:
        return CudaError(cudaErrorInvalidValue, absl::StrFormat("unknown launch attribute %d", id));
    }
  }
  return options;
}

}  // namespace

namespace tally::client {

absl::StatusOr<LaunchOptions> LaunchOptionsOf(const cudaLaunchAttribute* attributes,
                                              unsigned count) {
  return OptionsOf(attributes, count);
}

absl::StatusOr<LaunchOptions> LaunchOptionsOf(const CUlaunchAttribute* attributes, unsigned count) {
  return OptionsOf(attributes, count);
}

}  // namespace tally::client

namespace {

// A driver API launch (CUDA Driver API, cuLaunchKernel).
absl::Status PostDriver(const Kernel& kernel, ipc::Dim3 grid, ipc::Dim3 block, size_t shared_bytes,
                        CUstream stream, void** kernel_params, void** extra,
                        const LaunchOptions& options = {}) {
  TALLY_ASSIGN_OR_RETURN(std::span<const std::byte> params,
                         DriverParams(kernel, kernel_params, extra, param_buffer));
  return PostLaunch(kernel, grid, block, shared_bytes, stream, params, options);
}

}  // namespace

extern "C" {

cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                             size_t shared_bytes, cudaStream_t stream) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return Launch(*kernel, grid, block, args, shared_bytes, stream);
  });
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_bytes,
                                     struct CUstream_st* stream) noexcept {
  try {
    configurations.push_back({grid, block, shared_bytes, stream});
    return 0;
  } catch (...) {
    return 1;  // the `<<<>>>` expression then skips the launch
  }
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_bytes,
                                       void* stream) noexcept {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (configurations.empty()) {
      return CudaError(cudaErrorMissingConfiguration, "kernel stub called without <<<>>>");
    }
    const CallConfiguration configuration = configurations.back();
    configurations.pop_back();
    *grid = configuration.grid;
    *block = configuration.block;
    *shared_bytes = configuration.shared_bytes;
    *static_cast<cudaStream_t*>(stream) = configuration.stream;
    return absl::OkStatus();
  });
}

// The cudaKernel_t handed out is the shim's Kernel record; it stays valid for the process. It is
// resolved by the launch, which reports a module the device cannot load (kernels.cc).
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function) noexcept {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(kernel));
    TALLY_ASSIGN_OR_RETURN(Kernel * record, KernelRegistry::Get().Find(function));
    *kernel = reinterpret_cast<cudaKernel_t>(record);
    return absl::OkStatus();
  });
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream) noexcept {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    // __cudaGetKernel failed earlier (its handle stayed null): nothing to launch.
    if (kernel == nullptr) return CudaError(cudaErrorInvalidDeviceFunction, "no kernel");
    return Launch(*reinterpret_cast<Kernel*>(kernel), grid, block, args, shared_bytes, stream);
  });
}

cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3 grid, dim3 block, void** args,
                                        size_t shared_bytes, cudaStream_t stream) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return LaunchCooperative(*kernel, grid, block, args, shared_bytes, stream);
  });
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function,
                                void** args) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (config == nullptr) return CudaError(cudaErrorInvalidValue, "null launch configuration");
    TALLY_ASSIGN_OR_RETURN(const LaunchOptions options,
                           LaunchOptionsOf(config->attrs, config->numAttrs));
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    if ((options.flags & ipc::kLaunchCooperative) != 0) {
      return LaunchCooperative(*kernel, config->gridDim, config->blockDim, args,
                               config->dynamicSmemBytes, config->stream, options);
    }
    return Launch(*kernel, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                  config->stream, options);
  });
}

CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                        unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                        unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                        void** kernel_params, void** extra) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return PostDriver(*kernel, {grid_x, grid_y, grid_z}, {block_x, block_y, block_z}, shared_bytes,
                      stream, kernel_params, extra);
  });
}

CUresult cuLaunchCooperativeKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                                   unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                   unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                                   void** kernel_params) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    const ipc::Dim3 grid{grid_x, grid_y, grid_z};
    const ipc::Dim3 block{block_x, block_y, block_z};
    TALLY_RETURN_IF_ERROR(CheckCooperative(*kernel, grid, block, shared_bytes));
    return PostWithArgs(*kernel, grid, block, shared_bytes, stream, kernel_params,
                        {.flags = ipc::kLaunchCooperative});
  });
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction function, void** kernel_params,
                          void** extra) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (config == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null launch config");
    TALLY_ASSIGN_OR_RETURN(const LaunchOptions options,
                           LaunchOptionsOf(config->attrs, config->numAttrs));
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    const ipc::Dim3 grid{config->gridDimX, config->gridDimY, config->gridDimZ};
    const ipc::Dim3 block{config->blockDimX, config->blockDimY, config->blockDimZ};
    if ((options.flags & ipc::kLaunchCooperative) != 0) {
      TALLY_RETURN_IF_ERROR(CheckCooperative(*kernel, grid, block, config->sharedMemBytes));
    }
    return PostDriver(*kernel, grid, block, config->sharedMemBytes, config->hStream, kernel_params,
                      extra, options);
  });
}

}  // extern "C"
