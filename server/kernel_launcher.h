// Issues kernel launches in the form the scheduling policy chooses: the original kernel, its
// sliced form (consecutive slices of the grid, in order, on the launch's stream) or its
// preemptible PTB form (worker blocks taking tasks from a counter, asynchronous and
// stream-ordered through ptb_launches.h; with `preempt` the flag is raised at chosen moments and
// the kernel relaunched until every task ran).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptx_transform/launch_forms.h"
#include "ptx_transform/transform.h"
#include "scheduler/policy.h"
#include "server/backend/backend.h"
#include "server/dispatcher.h"
#include "server/module_registry.h"
#include "server/ptb_launches.h"

namespace tally::server {

// One client's launches by form, logged when it leaves (the validation mode's proof that its
// kernels really ran transformed).
struct LaunchStats {
  std::atomic<uint64_t> original{0};
  std::atomic<uint64_t> sliced{0};
  std::atomic<uint64_t> slices{0};  // launches of sliced forms
  std::atomic<uint64_t> preemptible{0};
  std::atomic<uint64_t> preempted{0};  // PTB launches stopped early at least once
  std::atomic<uint64_t> resumes{0};    // relaunches of stopped PTB kernels
  uint64_t total() const { return original + sliced + preemptible; }
  std::string Format() const;
};

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
  CUstream stream = nullptr;
  uint64_t client_id = 0;
  int32_t priority = 0;
  std::shared_ptr<LaunchStats> stats;
  // Where failures found after Launch returned (a PTB run) are deferred to; may be null (then
  // they are logged).
  std::shared_ptr<Dispatcher::ClientQueue> queue;
};

// "kernel K<<<(grid), (block), shared bytes>>>", for messages about a failed launch.
std::string DescribeLaunch(const KernelLaunch& launch);

// The original arguments as one pointer per parameter, into the launch's buffer.
std::vector<const void*> ArgumentPointers(const KernelLaunch& launch);

// Launches `function` (a variant of the launch's kernel, same block shape and shared memory)
// with the packed parameter buffer `params` on `stream`.
CUresult LaunchVariant(const DriverApi& api, const KernelLaunch& launch, CUfunction function,
                       ptx::Dim3 grid, CUstream stream, std::vector<uint8_t>& params);

class KernelLauncher {
 public:
  KernelLauncher(const Backend& backend, Dispatcher& dispatcher,
                 PreemptPoint preempt_point = RandomPreemptPoints());
  KernelLauncher(const KernelLauncher&) = delete;
  KernelLauncher& operator=(const KernelLauncher&) = delete;

  // Only on the dispatch thread (from a Command): asks the policy for the form and issues it.
  // Returns once the launch is queued on its stream, whatever its form.
  CUresult Launch(const KernelLaunch& launch);
  // Waits until the client's PTB launches have finished running (PtbLaunches::WaitForClient).
  void WaitForClient(uint64_t client_id) { ptb_.WaitForClient(client_id); }

 private:
  CUresult Issue(const KernelLaunch& launch);
  CUresult LaunchOriginal(const KernelLaunch& launch);
  CUresult LaunchSliced(const KernelLaunch& launch, uint32_t slices, uint32_t total);
  CUresult LaunchPreemptible(const KernelLaunch& launch, const scheduler::LaunchForm& form,
                             uint32_t total);

  const DriverApi& api_;
  Dispatcher& dispatcher_;
  uint32_t sm_count_ = 1;
  PtbLaunches ptb_;
};

}  // namespace tally::server
