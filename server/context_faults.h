// A fault in the CUDA context that every client shares: on NVIDIA's driver (and on the emulated
// GPU without tenants, TALLY_EMU_NO_TENANTS) a kernel's illegal address, trap or assert leaves
// the one context unusable for every client ("the process must be terminated and relaunched",
// cuda.h). The server cannot keep the other clients' state, but it can keep serving:
//   1. Detect: any thread whose driver call answered such an error reports it (Observe).
//   2. Attribute: the dispatch thread names the clients whose kernels were on the device, not
//      yet seen to end (Attribute). Each of them gets the fault's error, every other client of
//      that context CUDA_ERROR_DEVICE_UNAVAILABLE (cudaErrorDevicesUnavailable); both sticky.
//   3. Recover: new clients wait (Join) while clients of the faulted context remain; those end
//      on their error, or are disconnected `grace` after the fault (Evicted). Then the dispatch
//      thread resets the context (cuDevicePrimaryCtxReset) and calls Recovered: the waiting
//      clients go on in a sound context.
// Each context lifetime is a generation; a session belongs to the generation it joined.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "common/strong_id.h"
#include "server/fence_violation.h"

namespace tally::server {

class ContextFaults {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ContextFaults(std::chrono::milliseconds grace) : grace_(grace) {}
  ContextFaults(const ContextFaults&) = delete;
  ContextFaults& operator=(const ContextFaults&) = delete;

  // Whether `result` is one of the errors after which a CUDA context is unusable.
  static bool Poisons(CUresult result);

  // Called (without the caller's locks held) when the context may need the dispatch thread.
  void set_wake(std::function<void()> wake) { wake_ = std::move(wake); }

  // Any thread: a driver call answered `result`. The first poisoning error marks the current
  // generation's context faulted; others are ignored.
  void Observe(CUresult result);
  // Whether the current context has faulted (one atomic load: on every call's path).
  bool faulted() const { return faulted_.load(std::memory_order_acquire); }
  // The sticky error of `client`, a session of `generation`: CUDA_SUCCESS while that context is
  // sound. Waits (bounded) for the attribution, so that the faulting client gets its own error.
  CUresult ErrorFor(ClientId client, uint64_t generation);
  // Whether a session of `generation` must end at `now`: its context faulted `grace` before or
  // earlier.
  bool Evicted(uint64_t generation, Clock::time_point now) const;

  // A new session's generation; waits while the context is faulted, and gives up (nullopt) at
  // `deadline`. Every Join is followed by one Leave.
  std::optional<uint64_t> Join(Clock::time_point deadline);
  void Leave(uint64_t generation);

  // The dispatch thread's part.
  bool AttributionPending() const;
  // Names the clients that get the fault's error; logs them.
  void Attribute(const absl::flat_hash_set<ClientId>& culprits);
  // Attributed, and no session of the faulted generation is left.
  bool ResetDue() const;
  // The context was reset: a new generation starts and waiting sessions go on.
  void Recovered();
  // Faults recovered from since the server started.
  uint64_t recovered() const;

 private:
  const std::chrono::milliseconds grace_;
  std::function<void()> wake_;
  std::atomic<bool> faulted_{false};
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // attributed or recovered
  uint64_t generation_ = 1;
  uint64_t sessions_ = 0;  // of the current generation
  CUresult fault_ = CUDA_SUCCESS;
  Clock::time_point faulted_at_;
  bool attributed_ = false;
  absl::flat_hash_set<ClientId> culprits_;
};

// A session's view of the shared context's faults, for answers built off the session thread.
struct ContextFaultView {
  ContextFaults* faults = nullptr;  // null: the backend contains faults per client (tenants)
  ClientId client;
  uint64_t generation = 0;
  // The client's fence violation word (--isolation fenced|strict; null otherwise): a call that
  // succeeded after a fenced kernel of the client strayed answers the illegal address instead,
  // as CUDA reports a kernel's fault at the next synchronising call.
  std::shared_ptr<const FenceViolation> fence_violation;
  // The error to answer instead of `observed` (a poisoning error the driver gave): the client's
  // sticky error once the fault is attributed; `observed` otherwise.
  CUresult Answer(CUresult observed) const;
  bool FenceViolated() const { return fence_violation != nullptr && fence_violation->Set(); }
};

}  // namespace tally::server
