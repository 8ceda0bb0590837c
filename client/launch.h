// Kernel launches as the entry points (api/launch.cc) and graph replays (graph.cc) post them:
// a launch's checks, its argument packing and the one-way request.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/kernels.h"
#include "ipc/cuda_calls.h"

namespace tally::client {

// What a launch asks beyond its shape: cooperative (all blocks resident at once), and the
// cluster dimensions given at the launch (0 x 0 x 0: the kernel's own, if any). A graph's kernel
// node also keeps the library call its launch began when it was captured, so that each replay
// counts that call (library_calls.h).
struct LaunchOptions {
  uint32_t flags = 0;  // ipc::kLaunchCooperative
  ipc::Dim3 cluster{0, 0, 0};
  ipc::Library library_call = ipc::Library::kNone;
};

// A launch of a resolved kernel with its parameters packed, as a graph's kernel node keeps it.
struct PackedLaunch {
  const Kernel* kernel = nullptr;
  ipc::Dim3 grid{1, 1, 1};
  ipc::Dim3 block{1, 1, 1};
  size_t shared_bytes = 0;
  std::vector<std::byte> params;  // the kernel's parameter buffer layout
  LaunchOptions options;
};

// Packs `args` (one pointer per parameter: cudaLaunchKernel's args, cuLaunchKernel's
// kernelParams) with the layout the server derived from the kernel's PTX into `buffer`.
absl::Status PackArguments(const Kernel& kernel, void* const* args, std::vector<std::byte>& buffer);
// cuLaunchKernel's `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/_SIZE, ended by CU_LAUNCH_PARAM_END):
// the parameters already packed.
absl::StatusOr<std::span<const std::byte>> PackedParams(const Kernel& kernel, void** extra);
// The parameters of a driver API launch: exactly one of kernelParams and extra gives them (CUDA
// Driver API, cuLaunchKernel); packed into `buffer` where needed.
absl::StatusOr<std::span<const std::byte>> DriverParams(const Kernel& kernel, void** kernel_params,
                                                        void** extra,
                                                        std::vector<std::byte>& buffer);

// The launch attributes of cudaLaunchKernelExC and cuLaunchKernelEx (one enumeration, one value
// layout): cooperative and cluster dimensions are honoured, performance hints ignored,
// attributes whose semantics Tally does not provide cudaErrorNotSupported, unknown ids
// cudaErrorInvalidValue.
absl::StatusOr<LaunchOptions> LaunchOptionsOf(const cudaLaunchAttribute* attributes,
                                              unsigned count);
absl::StatusOr<LaunchOptions> LaunchOptionsOf(const CUlaunchAttribute* attributes, unsigned count);

// Checks a launch against the device's and the kernel's limits and posts it on `stream`, or adds
// it to the graph `stream` is capturing (capture.h). The launch begins the library call the
// calling thread is in, if it is the call's first (options.library_call where that is set).
absl::Status PostLaunch(const Kernel& kernel, ipc::Dim3 grid, ipc::Dim3 block, size_t shared_bytes,
                        cudaStream_t stream, std::span<const std::byte> params,
                        const LaunchOptions& options);

}  // namespace tally::client
