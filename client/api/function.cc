// Kernel attributes and occupancy (CUDA Runtime API, "Execution Control" and "Occupancy"), for
// kernels named by their host stub (resolved with the server first), and the driver API's
// cuFuncGetAttribute for CUfunctions.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>

#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::DriverError;
using tally::client::Kernel;
using tally::client::KernelRegistry;
using tally::client::Run;
using tally::client::RunDriver;
namespace ipc = tally::ipc;

namespace {

absl::StatusOr<ipc::FuncGetAttributesResponse> FetchAttributes(const Kernel& kernel) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer,
                         channel->Call(ipc::FuncGetAttributesRequest{.function = kernel.function}));
  return answer.fields;
}

absl::Status Occupancy(int* blocks, const void* function, int block_size, size_t dynamic_shared) {
  TALLY_RETURN_IF_ERROR(CheckOut(blocks));
  TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::OccupancyRequest{.block_size = block_size,
                                                       .function = kernel->function,
                                                       .dynamic_shared_bytes = dynamic_shared}));
  *blocks = answer.fields.blocks_per_multiprocessor;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* function) {
  return Run(__func__, [&]() -> absl::Status {
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
  return Run(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(function));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    return channel
        ->Call(ipc::FuncSetAttributeRequest{.attribute = static_cast<uint32_t>(attribute),
                                            .value = value,
                                            .function = kernel->function})
        .status();
  });
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* function,
                                                          int block_size, size_t dynamic_shared) {
  return Run(__func__, [&] { return Occupancy(blocks, function, block_size, dynamic_shared); });
}

// The flags only choose whether caching preferences are overridden (cudaOccupancyDefault,
// cudaOccupancyDisableCachingOverride), which the estimate here does not model.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* blocks, const void* function, int block_size, size_t dynamic_shared, unsigned int) {
  return Run(__func__, [&] { return Occupancy(blocks, function, block_size, dynamic_shared); });
}

CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  return RunDriver(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(value));
    TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, tally::client::DriverFunction(function));
    if (attribute < 0 || static_cast<size_t>(attribute) >= ipc::kFuncAttributeSlots) {
      return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUfunction_attribute");
    }
    TALLY_ASSIGN_OR_RETURN(const ipc::FuncGetAttributesResponse answer, FetchAttributes(*kernel));
    *value = answer.values[attribute];
    return absl::OkStatus();
  });
}

}  // extern "C"
