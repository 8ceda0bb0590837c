// Errno -> Status conversion for the system call wrapper; the errno rides along as a payload.
#include "ipc/syscall.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"

namespace tally::ipc {
namespace {

constexpr char kErrnoPayload[] = "tally.ipc/errno";

}  // namespace

absl::Status SyscallError(std::string_view call, int error_number) {
  absl::Status status = absl::ErrnoToStatus(error_number, std::string(call));
  status.SetPayload(kErrnoPayload, absl::Cord(std::to_string(error_number)));
  return status;
}

int ErrnoOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrnoPayload);
  int error_number = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &error_number)) return 0;
  return error_number;
}

}  // namespace tally::ipc
