// Kernel attributes and occupancy (CUDA Runtime API, "Execution Control" and "Occupancy"), for
// kernels named by their host stub (resolved with the server first), and their driver API forms
// for CUfunctions (CUDA Driver API, "Execution Control" and "Occupancy"). The server answers
// one question, how many blocks of a size fit on a multiprocessor; the suggestions built on it
// (a block size, the dynamic shared memory left) are searched here, with the application's
// block-size-to-shared-memory callback called in its own process.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "client/channel.h"
#include "client/device_attributes.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "client/launch.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DeviceAttribute;
using tally::client::DriverError;
using tally::client::DriverFunction;
using tally::client::Kernel;
using tally::client::KernelRegistry;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
namespace ipc = tally::ipc;

namespace {

absl::StatusOr<ipc::FuncGetAttributesResponse> FetchAttributes(const Kernel& kernel) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer,
                         channel->Call(ipc::FuncGetAttributesRequest{.function = kernel.function}));
  return answer.fields;
}

// The server checks and applies the value; the limit launches are checked against in the shim
// follows it (cudaFuncAttribute and CUfunction_attribute share this attribute's value).
absl::Status SetAttribute(const Kernel& kernel, int attribute, int value) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(
      channel
          ->Call(ipc::FuncSetAttributeRequest{.attribute = static_cast<uint32_t>(attribute),
                                              .value = value,
                                              .function = kernel.function})
          .status());
  if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    kernel.max_dynamic_shared_bytes.store(value, std::memory_order_relaxed);
  }
  return absl::OkStatus();
}

// The cache configuration is a preference (CUDA Driver API, cuFuncSetCacheConfig: "this setting
// does nothing on devices where the size of the L1 cache and shared memory are fixed"): the
// server's kernels run with the split their device chooses, so only the value is checked.
// cudaFuncCache and CUfunc_cache share their values.
absl::Status CheckCacheConfig(int config) {
  if (config >= CU_FUNC_CACHE_PREFER_NONE && config <= CU_FUNC_CACHE_PREFER_EQUAL) {
    return absl::OkStatus();
  }
  return CudaError(cudaErrorInvalidValue, "unknown cache configuration");
}

absl::Status GetName(const char** name, const Kernel& kernel) {
  TALLY_RETURN_IF_ERROR(CheckOut(name));
  *name = kernel.name.c_str();  // the record, and so its name, lives as long as the process
  return absl::OkStatus();
}

// CU_OCCUPANCY_DEFAULT or CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE (= the cudaOccupancy* flags):
// the latter only matters where global caching limits occupancy, which the server's estimate
// does not model.
absl::Status CheckOccupancyFlags(unsigned int flags) {
  if ((flags & ~unsigned{CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE}) == 0) return absl::OkStatus();
  return CudaError(cudaErrorInvalidValue, "unknown occupancy flags");
}

absl::StatusOr<int> BlocksPerMultiprocessor(const Kernel& kernel, int block_size,
                                            size_t dynamic_shared) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::OccupancyRequest{.block_size = block_size,
                                                       .function = kernel.function,
                                                       .dynamic_shared_bytes = dynamic_shared}));
  return answer.fields.blocks_per_multiprocessor;
}

absl::Status Occupancy(int* blocks, const Kernel& kernel, int block_size, size_t dynamic_shared,
                       unsigned int flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(blocks));
  TALLY_RETURN_IF_ERROR(CheckOccupancyFlags(flags));
  TALLY_ASSIGN_OR_RETURN(*blocks, BlocksPerMultiprocessor(kernel, block_size, dynamic_shared));
  return absl::OkStatus();
}

// cuOccupancyMaxActiveClusters: the server's device answers for clusters of the shape the
// attributes give (none: the kernel's own). The query has no grid; the other attributes are
// checked as a launch's.
template <typename Attribute>
absl::Status MaxActiveClusters(int* clusters, const Kernel& kernel, ipc::Dim3 block,
                               size_t dynamic_shared, const Attribute* attributes, unsigned count) {
  TALLY_RETURN_IF_ERROR(CheckOut(clusters));
  TALLY_ASSIGN_OR_RETURN(const tally::client::LaunchOptions options,
                         tally::client::LaunchOptionsOf(attributes, count));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::OccupancyClustersRequest{
                                          .block = block,
                                          .cluster = options.cluster,
                                          .function = kernel.function,
                                          .dynamic_shared_bytes = dynamic_shared}));
  *clusters = answer.fields.clusters;
  return absl::OkStatus();
}

// cuOccupancyMaxPotentialBlockSize[WithFlags]: the block size that keeps the most threads
// resident per multiprocessor and, among equals, the largest (fewest blocks); the candidates
// are the limit and the multiples of the warp size below it, as the runtime's
// cudaOccupancyMaxPotentialBlockSize (cuda_runtime.h) tries them, so both APIs agree.
// `shared_of_block_size`, if any, gives each candidate's dynamic shared memory, else `shared`.
absl::Status MaxPotentialBlockSize(int* min_grid_size, int* block_size, const Kernel& kernel,
                                   CUoccupancyB2DSize shared_of_block_size, size_t shared,
                                   int block_size_limit, unsigned int flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(min_grid_size));
  TALLY_RETURN_IF_ERROR(CheckOut(block_size));
  TALLY_RETURN_IF_ERROR(CheckOccupancyFlags(flags));
  if (block_size_limit < 0) return CudaError(cudaErrorInvalidValue, "negative block size limit");
  TALLY_ASSIGN_OR_RETURN(const int threads_per_multiprocessor,
                         DeviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
  TALLY_ASSIGN_OR_RETURN(const int granularity, DeviceAttribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE));
  TALLY_ASSIGN_OR_RETURN(const int multiprocessors,
                         DeviceAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  if (granularity <= 0) return CudaError(cudaErrorUnknown, "the device reports no warp size");
  TALLY_ASSIGN_OR_RETURN(const ipc::FuncGetAttributesResponse attributes, FetchAttributes(kernel));
  TALLY_ASSIGN_OR_RETURN(int limit, DeviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  if (block_size_limit > 0) limit = std::min(limit, block_size_limit);
  limit = std::min(limit, attributes.values[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK]);

  int best_size = 0, best_blocks = 0;
  for (int aligned = (limit + granularity - 1) / granularity * granularity; aligned > 0;
       aligned -= granularity) {
    const int size = std::min(aligned, limit);
    const size_t dynamic = shared_of_block_size != nullptr ? shared_of_block_size(size) : shared;
    TALLY_ASSIGN_OR_RETURN(const int blocks, BlocksPerMultiprocessor(kernel, size, dynamic));
    if (int64_t{blocks} * size > int64_t{best_blocks} * best_size) {
      best_size = size;
      best_blocks = blocks;
    }
    if (int64_t{best_blocks} * best_size >= threads_per_multiprocessor) break;  // cannot improve
  }
  *block_size = best_size;
  *min_grid_size = best_blocks * multiprocessors;
  return absl::OkStatus();
}

// The most dynamic shared memory per block with which `blocks` blocks of `block_size` threads
// still fit on a multiprocessor (CUDA Driver API, cuOccupancyAvailableDynamicSMemPerBlock), at
// most what the kernel may be launched with: the largest value for which the server's occupancy
// answer stays at `blocks`, found by bisection (occupancy falls as shared memory grows).
// CUDA_ERROR_INVALID_VALUE when `blocks` do not fit even without dynamic shared memory.
absl::Status AvailableDynamicShared(size_t* available, const Kernel& kernel, int blocks,
                                    int block_size) {
  TALLY_RETURN_IF_ERROR(CheckOut(available));
  if (blocks <= 0 || block_size <= 0) {
    return CudaError(cudaErrorInvalidValue, "blocks and block size must be positive");
  }
  const auto fits = [&](size_t dynamic) -> absl::StatusOr<bool> {
    TALLY_ASSIGN_OR_RETURN(const int resident,
                           BlocksPerMultiprocessor(kernel, block_size, dynamic));
    return resident >= blocks;
  };
  TALLY_ASSIGN_OR_RETURN(const bool fit_without, fits(0));
  if (!fit_without) {
    return CudaError(cudaErrorInvalidValue, "that many blocks never fit on a multiprocessor");
  }
  TALLY_ASSIGN_OR_RETURN(const ipc::FuncGetAttributesResponse attributes, FetchAttributes(kernel));
  size_t low = 0;  // fits
  size_t high = static_cast<size_t>(
      std::max(attributes.values[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES], 0));
  while (low < high) {
    const size_t middle = low + (high - low + 1) / 2;
    TALLY_ASSIGN_OR_RETURN(const bool fit, fits(middle));
    if (fit) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  *available = low;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* function) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(attributes));
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    TALLY_ASSIGN_OR_RETURN(const ipc::FuncGetAttributesResponse answer, FetchAttributes(*kernel));
    const int32_t* v = answer.values;
    std::memset(attributes, 0, sizeof(*attributes));
    attributes->maxThreadsPerBlock = v[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    attributes->sharedSizeBytes = v[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
    attributes->constSizeBytes = v[CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES];
    attributes->localSizeBytes = v[CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES];
    attributes->numRegs = v[CU_FUNC_ATTRIBUTE_NUM_REGS];
    attributes->ptxVersion = v[CU_FUNC_ATTRIBUTE_PTX_VERSION];
    attributes->binaryVersion = v[CU_FUNC_ATTRIBUTE_BINARY_VERSION];
    attributes->cacheModeCA = v[CU_FUNC_ATTRIBUTE_CACHE_MODE_CA];
    attributes->maxDynamicSharedSizeBytes = v[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];
    attributes->preferredShmemCarveout = v[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT];
    attributes->clusterDimMustBeSet = v[CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET];
    attributes->requiredClusterWidth = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
    attributes->requiredClusterHeight = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT];
    attributes->requiredClusterDepth = v[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH];
    attributes->nonPortableClusterSizeAllowed =
        v[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED];
    attributes->clusterSchedulingPolicyPreference =
        v[CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE];
    return absl::OkStatus();
  });
}

cudaError_t cudaFuncSetAttribute(const void* function, cudaFuncAttribute attribute, int value) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return SetAttribute(*kernel, attribute, value);
  });
}

cudaError_t cudaFuncSetCacheConfig(const void* function, cudaFuncCache config) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(KernelRegistry::Get().Resolve(function).status());
    return CheckCacheConfig(config);
  });
}

cudaError_t cudaFuncGetName(const char** name, const void* function) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return GetName(name, *kernel);
  });
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function,
                                                          int block_size, size_t dynamic_shared) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return Occupancy(blocks, *kernel, block_size, dynamic_shared, cudaOccupancyDefault);
  });
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* function, int block_size, size_t dynamic_shared, unsigned int flags) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return Occupancy(blocks, *kernel, block_size, dynamic_shared, flags);
  });
}

cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, const void* function,
                                           const cudaLaunchConfig_t* config) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (config == nullptr) return CudaError(cudaErrorInvalidValue, "null launch configuration");
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    const dim3 block = config->blockDim;
    return MaxActiveClusters(clusters, *kernel, {block.x, block.y, block.z},
                             config->dynamicSmemBytes, config->attrs, config->numAttrs);
  });
}

cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t* available, const void* function,
                                                      int blocks, int block_size) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    return AvailableDynamicShared(available, *kernel, blocks, block_size);
  });
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(value));
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    if (attribute < 0 || static_cast<size_t>(attribute) >= ipc::kFuncAttributeSlots) {
      return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUfunction_attribute");
    }
    TALLY_ASSIGN_OR_RETURN(const ipc::FuncGetAttributesResponse answer, FetchAttributes(*kernel));
    *value = answer.values[attribute];
    return absl::OkStatus();
  });
}

CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return SetAttribute(*kernel, attribute, value);
  });
}

CUresult cuFuncSetCacheConfig(CUfunction function, CUfunc_cache config) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(DriverFunction(function).status());
    return CheckCacheConfig(config);
  });
}

CUresult cuFuncGetName(const char** name, CUfunction function) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return GetName(name, *kernel);
  });
}

CUresult cuOccupancyMaxActiveClusters(int* clusters, CUfunction function,
                                      const CUlaunchConfig* config) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (config == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null launch config");
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return MaxActiveClusters(clusters, *kernel,
                             {config->blockDimX, config->blockDimY, config->blockDimZ},
                             config->sharedMemBytes, config->attrs, config->numAttrs);
  });
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, CUfunction function,
                                                     int block_size, size_t dynamic_shared) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, function, block_size,
                                                              dynamic_shared, CU_OCCUPANCY_DEFAULT);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction function,
                                                              int block_size, size_t dynamic_shared,
                                                              unsigned int flags) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return Occupancy(blocks, *kernel, block_size, dynamic_shared, flags);
  });
}

CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid_size, int* block_size, CUfunction function,
                                          CUoccupancyB2DSize shared_of_block_size,
                                          size_t dynamic_shared, int block_size_limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid_size, block_size, function,
                                                   shared_of_block_size, dynamic_shared,
                                                   block_size_limit, CU_OCCUPANCY_DEFAULT);
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid_size, int* block_size,
                                                   CUfunction function,
                                                   CUoccupancyB2DSize shared_of_block_size,
                                                   size_t dynamic_shared, int block_size_limit,
                                                   unsigned int flags) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return MaxPotentialBlockSize(min_grid_size, block_size, *kernel, shared_of_block_size,
                                 dynamic_shared, block_size_limit, flags);
  });
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* available, CUfunction function, int blocks,
                                                 int block_size) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(function));
    return AvailableDynamicShared(available, *kernel, blocks, block_size);
  });
}

}  // extern "C"
