// A program that live mode starts (tally-server, or a job through tally-run): its stdin and
// stdout are pipes when it speaks a line protocol (the jobs' --handshake), else /dev/null and
// its log file; stderr always goes to its log file. It is stopped by its own pid, and killed if
// still running when the object goes away, so no run leaves a process behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ipc/unique_fd.h"

namespace tally::bench {

class ChildProcess {
 public:
  // `argv[0]` is a path. `log` receives stderr (and stdout when `talks` is false). The child
  // has our environment with `environment`'s variables ("NAME=value") added or replacing ours.
  static absl::StatusOr<ChildProcess> Start(const std::vector<std::string>& argv,
                                            const std::string& log, bool talks,
                                            const std::vector<std::string>& environment = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();

  absl::Status SendLine(std::string_view line);
  // Reads stdout until a line equal to `wanted`; DeadlineExceeded or an error naming the log
  // when it does not come.
  absl::Status AwaitLine(std::string_view wanted, absl::Duration timeout);
  // Its exit status (or 128 + the signal that ended it); killed after `timeout`.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // SIGTERM, then its exit status (SIGKILL after `timeout`).
  absl::StatusOr<int> Terminate(absl::Duration timeout);

  pid_t pid() const { return pid_; }
  const std::string& log() const { return log_; }

 private:
  ChildProcess(pid_t pid, ipc::UniqueFd in, ipc::UniqueFd out, std::string log)
      : pid_(pid), in_(std::move(in)), out_(std::move(out)), log_(std::move(log)) {}

  pid_t pid_ = -1;  // -1 once reaped
  ipc::UniqueFd in_, out_;
  std::string log_;
  std::string buffered_;  // stdout read but not yet split into lines
};

}  // namespace tally::bench
