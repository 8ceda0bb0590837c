// Futex wait/wake on a 32-bit word in memory shared between processes (not FUTEX_PRIVATE: the
// waiter and the waker live in different address spaces).
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tally::ipc {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the kernel's futex word must be a plain 32-bit integer");

// Sleeps while `word` holds `expected`, for at most `timeout`. Returns OK when woken, when the
// word no longer held `expected` or when the timeout passed: callers re-check their condition.
// An error only for a futex call that cannot work (bad address, no futex support).
absl::Status FutexWait(std::atomic<uint32_t>& word, uint32_t expected, absl::Duration timeout);

// Wakes up to `count` sleepers on `word`, in any process that maps it.
absl::Status FutexWake(std::atomic<uint32_t>& word, int count);

}  // namespace tally::ipc
