// Spin-then-sleep waiting on shared memory: a bounded spin with a pause instruction, then futex
// sleeps announced through a "sleeping" word, so that the other side only makes a wake-up system
// call when someone actually sleeps. Waits end at a timeout or when a liveness check fails.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tally::ipc {

// About 35-50 us of spinning on this machine's AMD EPYC (a pause takes ~35 ns there, and on Intel
// since Skylake; older cores spin ~10x shorter): about what a futex sleep + wake costs (~60 us,
// issue 4), so a peer that answers within that time is caught without a system call, while an
// idle peer costs at most that much CPU per wait.
inline constexpr int kDefaultSpinIterations = 1 << 10;

struct WaitOptions {
  // Total time before the wait gives up with kDeadlineExceeded.
  absl::Duration timeout = absl::InfiniteDuration();
  int spin_iterations = kDefaultSpinIterations;
  // Called before each sleep; a non-OK status ends the wait with that status. Connections set it
  // to "is the peer's socket still open", which is what keeps a wait from outliving the peer.
  std::function<absl::Status()> liveness;
  // Longest single sleep when `liveness` is set: the bound on how late a dead peer is noticed.
  absl::Duration liveness_interval = absl::Milliseconds(10);
};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

namespace internal {
absl::Status SleepUntil(absl::FunctionRef<bool()> ready, std::atomic<uint32_t>& sleeping,
                        const WaitOptions& options);
}  // namespace internal

// Returns OK once ready() is true. `sleeping` is the waiter's announcement word in shared memory;
// the side that makes ready() true must call WakeIfSleeping on it afterwards.
//
// No lost wake-ups: the waiter stores `sleeping` = 1 and then reads the state in ready(); the
// publisher stores the state and then reads `sleeping`. With all four accesses seq_cst, one of
// them sees the other's store, so either the waiter does not sleep or the publisher wakes it.
// Hence ready() must read with memory_order_seq_cst and the publisher store with it. (seq_cst
// accesses rather than fences: as fast on x86, cheaper on ARM, and understood by TSan.)
template <typename Ready>
absl::Status WaitUntil(Ready&& ready, std::atomic<uint32_t>& sleeping, const WaitOptions& options) {
  for (int i = 0; i < options.spin_iterations; ++i) {
    if (ready()) return absl::OkStatus();
    CpuRelax();
  }
  return internal::SleepUntil(ready, sleeping, options);
}

// Called right after the seq_cst store that publishes what a waiter may wait for. Without a
// sleeper this is one load, no system call.
absl::Status WakeIfSleeping(std::atomic<uint32_t>& sleeping);

}  // namespace tally::ipc
