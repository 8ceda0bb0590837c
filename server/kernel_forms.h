// A queued kernel launch, and the driver calls that issue one run of it in each form: the
// original kernel, one slice of its sliced form, one run of its PTB form (ARCHITECTURE.md,
// "Transformations"). Which run, when, is the dispatcher's business (server/kernel_runs.h).
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/strong_id.h"
#include "ptx_transform/launch_forms.h"
#include "ptx_transform/transform.h"
#include "scheduler/types.h"
#include "server/backend/backend.h"
#include "server/host_callbacks.h"
#include "server/module_registry.h"

namespace tally::server {

// A library call that runs in a vendor library inside the server (server/libraries/): machine
// code, several kernels, issued as one unit on the launch's stream and never transformed, like
// a kernel that cannot be (docs/scheduling.md).
struct VendorCall {
  std::function<CUresult(CUstream)> issue;
  std::string name;   // "cuBLAS GEMM 64x64x64 ...", for messages
  KernelId identity;  // the call and its sizes, as the policy sees its shape
};

// A kernel of a client's module, or a vendor library call.
struct KernelLaunch {
  std::shared_ptr<SharedModule> module;  // keeps `kernel` loaded
  const Kernel* kernel = nullptr;        // null for a vendor call
  std::shared_ptr<const VendorCall> vendor;
  std::vector<std::byte> params;  // laid out by kernel->signature
  // A fenced kernel's last parameter (--isolation fenced|strict; Kernel::fenced): the ranges of
  // the launching client's memory.
  std::optional<ptx::FenceParams> fence;
  // --isolation fenced --unfenceable alone: a kernel that cannot be fenced, which the dispatcher
  // issues only while its client is alone with memory on the device (server/unfenced_gate.h).
  bool unfenced = false;
  ptx::Dim3 grid;
  ptx::Dim3 block;
  uint32_t shared_bytes = 0;
  // cudaLaunchCooperativeKernel: all blocks resident at once (grid-wide sync), so always the
  // original form, issued with cuLaunchCooperativeKernel.
  bool cooperative = false;
  // Cluster dimensions given at the launch (0 x 0 x 0: none), issued with cuLaunchKernelEx; such
  // a launch, like one of a kernel with its own clusters, keeps its original form.
  ptx::Dim3 cluster{0, 0, 0};
  CUstream stream = nullptr;
  // The stream's host function gate as the launch was queued (host_callbacks.h): a run behind a
  // host function that has not run yet must not hold the client's queue (the function may wait
  // for the client's other streams).
  const uint32_t* gate_word = nullptr;
  uint32_t gate_generation = 0;
  // When the server took the launch from the client: the steady clock, as Dispatcher::Now.
  scheduler::Time received = std::chrono::duration_cast<scheduler::Time>(
      std::chrono::steady_clock::now().time_since_epoch());
  bool BehindHostFunction() const { return StreamGate::Closed(gate_word, gate_generation); }
  bool Clustered() const { return cluster.x != 0; }
  // What only the original form can run: all blocks resident at once, clusters set here, or a
  // vendor call.
  bool OriginalOnly() const { return cooperative || Clustered() || vendor != nullptr; }
};

// "kernel K<<<(grid), (block), shared bytes>>>" (a vendor call: its name), for messages about
// a failed launch.
std::string DescribeLaunch(const KernelLaunch& launch);

// The original arguments as one pointer per parameter, into the launch's buffer, and the fence's
// parameter after them for a fenced kernel.
std::vector<const void*> ArgumentPointers(const KernelLaunch& launch);

// The kernel's name, or the vendor call's.
const std::string& LaunchName(const KernelLaunch& launch);

// The whole launch in its original form on its stream (a vendor call: the call).
CUresult LaunchOriginal(const DriverApi& api, const KernelLaunch& launch);

// Launches `function` (a variant of the launch's kernel, same block shape and shared memory)
// on `grid` with the packed parameter buffer `params` on the launch's stream.
CUresult LaunchVariant(const DriverApi& api, const KernelLaunch& launch, CUfunction function,
                       ptx::Dim3 grid, std::vector<uint8_t>& params);

}  // namespace tally::server
