// PTB (preemptible) launches in flight. A PTB launch is stream-ordered and asynchronous like any
// other launch: the dispatch thread only puts a gate (a host function) on the client's stream and
// returns. When the stream reaches the gate (everything before it has finished), an agent
// thread runs the PTB kernel on a private stream: with `preempt` it raises the kernel's flag at
// chosen moments and relaunches it with the same task counter until every task ran. The gate
// holds the client's stream until then, so later work of that stream sees the kernel's full
// result, while other streams and other clients go on.
//
// With NVIDIA's driver, host functions of all streams may run on one driver thread (CUDA Runtime
// API, cudaLaunchHostFunc): a gate then delays other host functions (never kernels, copies or
// the dispatcher) until its PTB kernel is done. The agents' kernels wait for nothing, so gates
// cannot deadlock each other.
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/backend/backend.h"
#include "server/dispatcher.h"
#include "server/waiter_pool.h"

namespace tally::server {

struct KernelLaunch;

// Where a preempted PTB launch is stopped. Called before each run of its kernel (the first and
// every resumption) with the tasks taken so far and the launch's total; returns after how many
// taken tasks the preempt flag goes up in that run: `taken` (or less) raises it before the run
// starts, `total` (or more) never. Called on agent threads, possibly several at once.
using PreemptPoint = std::function<uint32_t(uint32_t taken, uint32_t total)>;

// Uniformly random points among the remaining tasks, from a fixed seed (a failing run can be
// repeated).
PreemptPoint RandomPreemptPoints();

class PtbLaunches {
 public:
  PtbLaunches(const Backend& backend, Dispatcher& dispatcher, PreemptPoint preempt_point);
  PtbLaunches(const PtbLaunches&) = delete;
  PtbLaunches& operator=(const PtbLaunches&) = delete;
  // Waits for every launch in flight (their clients' sessions have waited for them already).
  ~PtbLaunches();

  // Queues the PTB variant of `launch` with `workers` worker blocks for its `total` tasks on
  // `launch.stream`; with `preempt` stopped and resumed at PreemptPoint's moments (at most
  // kMaxPreemptions times). Failures of the run are deferred errors of `launch.queue`.
  CUresult Start(const KernelLaunch& launch, uint32_t workers, uint32_t total, bool preempt);
  // Waits until the PTB launches `client_id` started have finished (before its memory goes,
  // including launches on streams it destroyed).
  void WaitForClient(uint64_t client_id);

  // Preemptions per launch: after these the kernel runs to its end, so every launch finishes
  // whatever the timing.
  static constexpr int kMaxPreemptions = 3;

 private:
  struct Run;
  // The PtbState of a launch (mapped host memory: the host raises the flag and reads the
  // progress while the kernel runs) and the stream its kernel runs on; reused.
  struct Slot {
    void* host = nullptr;  // a ptx::PtbState
    CUdeviceptr device = 0;
    CUstream stream = nullptr;
  };

  static void CUDA_CB Gate(void* run);
  // On an agent thread; returns the run's result.
  CUresult Execute(const Run& run);
  CUresult AcquireSlot(Slot& slot);
  void ReleaseSlot(const Slot& slot);
  void Finished(uint64_t client_id);

  const DriverApi& api_;
  Dispatcher& dispatcher_;
  PreemptPoint preempt_point_;
  std::mutex mutex_;
  std::condition_variable finished_;
  absl::flat_hash_map<uint64_t, uint32_t> running_;  // started and not finished, per client
  std::vector<Slot> free_slots_;
  WaiterPool agents_;  // last: its threads use everything above
};

}  // namespace tally::server
