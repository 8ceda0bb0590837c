// The sleeping half of spin-then-sleep waits, and the matching wake-up.
#include "ipc/wait.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ipc/futex.h"

namespace tally::ipc {
namespace internal {
namespace {

absl::Status SleepLoop(absl::FunctionRef<bool()> ready, std::atomic<uint32_t>& sleeping,
                       const WaitOptions& options) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + options.timeout;  // InfiniteFuture for an infinite timeout
  while (true) {
    sleeping.store(1, std::memory_order_seq_cst);
    if (ready()) return absl::OkStatus();
    if (options.liveness) {
      absl::Status alive = options.liveness();
      if (!alive.ok()) return alive;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "IPC wait timed out after ", absl::FormatDuration(now - start), " (peer not answering)"));
    }
    absl::Duration slice = deadline - now;
    if (options.liveness) slice = std::min(slice, options.liveness_interval);
    absl::Status slept = FutexWait(sleeping, 1, slice);
    if (!slept.ok()) return slept;
  }
}

}  // namespace

absl::Status SleepUntil(absl::FunctionRef<bool()> ready, std::atomic<uint32_t>& sleeping,
                        const WaitOptions& options) {
  absl::Status status = SleepLoop(ready, sleeping, options);
  // Withdraw the announcement so the peer does not make wake-up calls for nobody.
  sleeping.store(0, std::memory_order_relaxed);
  return status;
}

}  // namespace internal

absl::Status WakeIfSleeping(std::atomic<uint32_t>& sleeping) {
  if (sleeping.load(std::memory_order_seq_cst) == 0) return absl::OkStatus();
  // Only the caller that flips the word wakes: repeated posts to a sleeper make one syscall.
  if (sleeping.exchange(0, std::memory_order_relaxed) == 0) return absl::OkStatus();
  return FutexWake(sleeping, 1);
}

}  // namespace tally::ipc
