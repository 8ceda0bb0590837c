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
  long result;
  do {
    result = Futex(word, FUTEX_WAIT, expected, limit);
  } while (result == -1 && errno == EINTR);
  // EAGAIN: the word changed before we slept; ETIMEDOUT: the slice ended. Both mean "re-check",
  // and are the common case of every wait: no error status (and its message) is built for them.
  if (result == 0 || errno == EAGAIN || errno == ETIMEDOUT) return absl::OkStatus();
  return SyscallError("futex(FUTEX_WAIT)", errno);
}

absl::Status FutexWake(std::atomic<uint32_t>& word, int count) {
  return RetryEintr("futex(FUTEX_WAKE)",
                    [&] { return Futex(word, FUTEX_WAKE, static_cast<uint32_t>(count), nullptr); })
      .status();
}

}  // namespace tally::ipc
