// Kernel launches: cudaLaunchKernel, and what `<<<>>>` compiles to in CUDA 13
// (crt/host_runtime.h's __cudaLaunch: __cudaPushCallConfiguration at the call site, then in the
// stub __cudaGetKernel once, __cudaPopCallConfiguration and __cudaLaunchKernel). Arguments are
// packed with the layout the server derived from the kernel's PTX and posted one-way.
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

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
                    cudaStream_t stream) {
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
                                                .function = kernel.function,
                                                .stream = StreamHandle(stream)},
                       buffer);
}

}  // namespace

extern "C" {

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
