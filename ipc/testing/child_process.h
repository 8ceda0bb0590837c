// Test helper: runs a function in a forked child process, which exits 0 when the function
// returns an OK Status (and prints the error otherwise). Killed and reaped if still running when
// the handle goes away, so a failing test leaves no process behind.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "absl/status/status.h"

namespace tally::ipc::testing {

class ChildProcess {
 public:
  template <typename Fn>
  static ChildProcess Fork(Fn&& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      const absl::Status status = body();
      if (!status.ok()) std::fprintf(stderr, "child: %s\n", status.ToString().c_str());
      std::fflush(stderr);
      _exit(status.ok() ? 0 : 1);  // no atexit handlers: they belong to the test runner
    }
    return ChildProcess(pid);
  }

  ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) {
      Kill();
      Wait();
    }
  }

  pid_t pid() const { return pid_; }
  void Kill() const { ::kill(pid_, SIGKILL); }

  // The exit code, or 128 + signal number when killed; -1 when fork failed.
  int Wait() {
    if (pid_ <= 0) return -1;
    int status = 0;
    const pid_t pid = std::exchange(pid_, -1);
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
};

}  // namespace tally::ipc::testing
