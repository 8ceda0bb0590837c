// Futex system calls on shared (inter-process) words.
#include "ipc/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "ipc/syscall.h"

namespace tally::ipc {
namespace {

long Futex(std::atomic<uint32_t>& word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

absl::Status FutexWait(std::atomic<uint32_t>& word, uint32_t expected, absl::Duration timeout) {
  const timespec relative = absl::ToTimespec(timeout);
  const timespec* limit = timeout == absl::InfiniteDuration() ? nullptr : &relative;
  absl::StatusOr<long> result =
      RetryEintr("futex(FUTEX_WAIT)", [&] { return Futex(word, FUTEX_WAIT, expected, limit); });
  // EAGAIN: the word changed before we slept; ETIMEDOUT: the slice ended. Both mean "re-check".
  if (result.ok()) return absl::OkStatus();
  const int error_number = ErrnoOf(result.status());
  return error_number == EAGAIN || error_number == ETIMEDOUT ? absl::OkStatus() : result.status();
}

absl::Status FutexWake(std::atomic<uint32_t>& word, int count) {
  return RetryEintr("futex(FUTEX_WAKE)",
                    [&] { return Futex(word, FUTEX_WAKE, static_cast<uint32_t>(count), nullptr); })
      .status();
}

}  // namespace tally::ipc
