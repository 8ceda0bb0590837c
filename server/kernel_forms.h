// A queued kernel launch, and the driver calls that issue one run of it in each form: the
// original kernel, one slice of its sliced form, one run of its PTB form (ARCHITECTURE.md,
// "Transformations"). Which run, when, is the dispatcher's business (server/kernel_runs.h).
#pragma once

#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptx_transform/launch_forms.h"
#include "scheduler/types.h"
#include "server/backend/backend.h"
#include "server/host_callbacks.h"
#include "server/module_registry.h"

namespace tally::server {

struct KernelLaunch {
  std::shared_ptr<SharedModule> module;  // keeps `kernel` loaded
  const Kernel* kernel = nullptr;
  std::vector<std::byte> params;  // laid out by kernel->signature
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
  // What only the original form can run: all blocks resident at once, or clusters set here.
  bool OriginalOnly() const { return cooperative || Clustered(); }
};

// "kernel K<<<(grid), (block), shared bytes>>>", for messages about a failed launch.
std::string DescribeLaunch(const KernelLaunch& launch);

// The original arguments as one pointer per parameter, into the launch's buffer.
std::vector<const void*> ArgumentPointers(const KernelLaunch& launch);

// The whole launch in its original form on its stream.
CUresult LaunchOriginal(const DriverApi& api, const KernelLaunch& launch);

// Launches `function` (a variant of the launch's kernel, same block shape and shared memory)
// on `grid` with the packed parameter buffer `params` on the launch's stream.
CUresult LaunchVariant(const DriverApi& api, const KernelLaunch& launch, CUfunction function,
                       ptx::Dim3 grid, std::vector<uint8_t>& params);

}  // namespace tally::server
