// The one wrapper through which the IPC layer makes system calls: retries EINTR and turns a
// failure into a Status that names the call.
#pragma once

#include <cerrno>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tally::ipc {

// "connect(/run/user/1000/tally/server.sock): Connection refused", with the errno's status code
// (ECONNREFUSED -> kUnavailable, ETIMEDOUT -> kDeadlineExceeded, ...).
absl::Status SyscallError(std::string_view call, int error_number);

// The errno behind a SyscallError, 0 for any other status: for callers that expect particular
// failures (EEXIST from mkdir, EAGAIN from a futex wait), without relying on code mappings.
int ErrnoOf(const absl::Status& status);

// Calls `fn` (a libc-style call returning -1 with errno set on failure) until it does not fail
// with EINTR, so that a signal delivered to the application never surfaces as an IPC error.
// Not for close(): Linux releases the descriptor even when close() reports EINTR.
template <typename Fn>
auto RetryEintr(std::string_view call, Fn&& fn) -> absl::StatusOr<decltype(fn())> {
  while (true) {
    auto result = fn();
    if (result != -1) return result;
    if (errno != EINTR) return SyscallError(call, errno);
  }
}

}  // namespace tally::ipc
