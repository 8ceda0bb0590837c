// Kernel launches: cudaLaunchKernel, and what `<<<>>>` compiles to in CUDA 13
// (crt/host_runtime.h's __cudaLaunch: __cudaPushCallConfiguration at the call site, then in the
// stub __cudaGetKernel once, __cudaPopCallConfiguration and __cudaLaunchKernel). Arguments are
// packed with the layout the server derived from the kernel's PTX and posted one-way.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::Kernel;
using tally::client::KernelRegistry;
using tally::client::Run;
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

absl::Status Launch(Kernel& kernel, dim3 grid, dim3 block, void** args, size_t shared_bytes,
                    cudaStream_t stream, uint32_t flags = 0) {
  TALLY_RETURN_IF_ERROR(KernelRegistry::Get().Resolve(kernel));
  std::vector<std::byte> buffer(kernel.param_buffer_size);
  if (!kernel.params.empty() && args == nullptr) {
    return CudaError(cudaErrorInvalidValue, "kernel arguments missing");
  }
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    std::memcpy(buffer.data() + kernel.params[i].offset, args[i], kernel.params[i].size);
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::LaunchKernelRequest{.grid = {grid.x, grid.y, grid.z},
                                                .block = {block.x, block.y, block.z},
                                                .shared_bytes = static_cast<uint32_t>(shared_bytes),
                                                .flags = flags,
                                                .function = kernel.function,
                                                .stream = StreamHandle(stream)},
                       buffer);
}

// A cooperative launch needs every block resident at once: cudaErrorCooperativeLaunchTooLarge
// when the grid exceeds what the device holds (CUDA Runtime API, cudaLaunchCooperativeKernel).
absl::Status LaunchCooperative(Kernel& kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream) {
  TALLY_RETURN_IF_ERROR(KernelRegistry::Get().Resolve(kernel));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const auto& attributes = channel->device().attributes;
  using A = ipc::SnapshotAttribute;
  if (attributes[static_cast<size_t>(A::k_COOPERATIVE_LAUNCH)] == 0) {
    return CudaError(cudaErrorNotSupported, "the device does not support cooperative launches");
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > INT32_MAX) {
    return CudaError(cudaErrorInvalidConfiguration, "invalid block size");
  }
  TALLY_ASSIGN_OR_RETURN(auto occupancy,
                         channel->Call(ipc::OccupancyRequest{
                             .block_size = static_cast<int32_t>(threads),
                             .function = kernel.function,
                             .dynamic_shared_bytes = shared_bytes}));
  const uint64_t resident =
      uint64_t(occupancy.fields.blocks_per_multiprocessor) *
      uint64_t(attributes[static_cast<size_t>(A::k_MULTIPROCESSOR_COUNT)]);
  const uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  if (blocks > resident) {
    return CudaError(cudaErrorCooperativeLaunchTooLarge,
                     absl::StrFormat("%d blocks, but at most %d can be resident at once", blocks,
                                     resident));
  }
  return Launch(kernel, grid, block, args, shared_bytes, stream, ipc::kLaunchCooperative);
}

// The launch attributes of cudaLaunchKernelExC: cooperative is honoured, performance hints are
// ignored (they never change results), attributes whose semantics Tally does not provide are
// cudaErrorNotSupported, and ids cuda_runtime_api.h does not know are cudaErrorInvalidValue.
absl::StatusOr<uint32_t> LaunchFlags(const cudaLaunchConfig_t& config) {
  if (config.numAttrs > 0 && config.attrs == nullptr) {
    return CudaError(cudaErrorInvalidValue, "numAttrs > 0 with null attrs");
  }
  uint32_t flags = 0;
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const cudaLaunchAttribute& attribute = config.attrs[i];
    switch (attribute.id) {
      case cudaLaunchAttributeCooperative:
        if (attribute.val.cooperative != 0) flags |= ipc::kLaunchCooperative;
        break;
      case cudaLaunchAttributeIgnore:
      case cudaLaunchAttributeAccessPolicyWindow:
      case cudaLaunchAttributePriority:
      case cudaLaunchAttributeMemSyncDomainMap:
      case cudaLaunchAttributeMemSyncDomain:
      case cudaLaunchAttributePreferredSharedMemoryCarveout:
      case cudaLaunchAttributeNvlinkUtilCentricScheduling:
        break;
      case cudaLaunchAttributeClusterDimension:
        if (attribute.val.clusterDim.x * attribute.val.clusterDim.y *
                attribute.val.clusterDim.z <= 1) {
          break;  // a cluster of one block is no cluster
        }
        [[fallthrough]];
      case cudaLaunchAttributeSynchronizationPolicy:
      case cudaLaunchAttributeClusterSchedulingPolicyPreference:
      case cudaLaunchAttributeProgrammaticStreamSerialization:
      case cudaLaunchAttributeProgrammaticEvent:
      case cudaLaunchAttributePreferredClusterDimension:
      case cudaLaunchAttributeLaunchCompletionEvent:
      case cudaLaunchAttributeDeviceUpdatableKernelNode:
        return CudaError(cudaErrorNotSupported,
                         absl::StrFormat("launch attribute %d is not supported by Tally",
                                         static_cast<int>(attribute.id)));
      default:
        return CudaError(cudaErrorInvalidValue,
                         absl::StrFormat("unknown launch attribute %d",
                                         static_cast<int>(attribute.id)));
    }
  }
  return flags;
}

}  // namespace

extern "C" {

cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3 grid, dim3 block, void** args,
                                        size_t shared_bytes, cudaStream_t stream) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return LaunchCooperative(*kernel, grid, block, args, shared_bytes, stream);
  });
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* function,
                                void** args) {
  return Run(__func__, [&]() -> absl::Status {
    if (config == nullptr) return CudaError(cudaErrorInvalidValue, "null launch configuration");
    TALLY_ASSIGN_OR_RETURN(const uint32_t flags, LaunchFlags(*config));
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    if ((flags & ipc::kLaunchCooperative) != 0) {
      return LaunchCooperative(*kernel, config->gridDim, config->blockDim, args,
                               config->dynamicSmemBytes, config->stream);
    }
    return Launch(*kernel, config->gridDim, config->blockDim, args, config->dynamicSmemBytes,
                  config->stream);
  });
}

cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args,
                             size_t shared_bytes, cudaStream_t stream) {
  return Run(__func__, [&]() -> absl::Status {
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
  return Run(__func__, [&]() -> absl::Status {
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

// The cudaKernel_t handed out is the shim's Kernel record; it stays valid for the process.
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function) noexcept {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(kernel));
    TALLY_ASSIGN_OR_RETURN(Kernel * record, KernelRegistry::Get().Resolve(function));
    *kernel = reinterpret_cast<cudaKernel_t>(record);
    return absl::OkStatus();
  });
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                               size_t shared_bytes, cudaStream_t stream) noexcept {
  return Run(__func__, [&]() -> absl::Status {
    // __cudaGetKernel failed earlier (its handle stayed null): nothing to launch.
    if (kernel == nullptr) return CudaError(cudaErrorInvalidDeviceFunction, "no kernel");
    return Launch(*reinterpret_cast<Kernel*>(kernel), grid, block, args, shared_bytes, stream);
  });
}

}  // extern "C"
