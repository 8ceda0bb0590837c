// posix_spawn with the child's ends of the pipes and its log file dup2'ed onto 0, 1 and 2;
// every descriptor of ours is close-on-exec, so a child inherits nothing else.
#include "benchmarks/bench/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "common/status.h"

extern char** environ;

namespace tally::bench {
namespace {

absl::Status Errno(std::string_view what) {
  return absl::InternalError(fmt::format("{}: {}", what, std::strerror(errno)));
}

absl::StatusOr<std::pair<ipc::UniqueFd, ipc::UniqueFd>> Pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");
  return std::pair{ipc::UniqueFd(fds[0]), ipc::UniqueFd(fds[1])};
}

// Ours with `extra`'s variables added, each replacing ours of the same name.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  const auto name = [](std::string_view variable) {
    return variable.substr(0, variable.find('='));
  };
  std::vector<std::string> environment(extra);
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const auto same_name = [&](const std::string& added) { return name(added) == name(*variable); };
    if (std::none_of(extra.begin(), extra.end(), same_name)) environment.emplace_back(*variable);
  }
  return environment;
}

std::vector<char*> NullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

int ExitStatus(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

absl::StatusOr<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                                 const std::string& log, bool talks,
                                                 const std::vector<std::string>& environment) {
  ipc::UniqueFd log_fd(open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!log_fd.valid()) return Errno("cannot write " + log);
  ipc::UniqueFd null_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd.valid()) return Errno("/dev/null");
  ipc::UniqueFd child_in = std::move(null_fd), child_out, our_in, our_out;
  if (talks) {
    TALLY_ASSIGN_OR_RETURN(auto in, Pipe());
    TALLY_ASSIGN_OR_RETURN(auto out, Pipe());
    child_in = std::move(in.first);
    our_in = std::move(in.second);
    our_out = std::move(out.first);
    child_out = std::move(out.second);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_in.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, talks ? child_out.get() : log_fd.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd.get(), STDERR_FILENO);
  std::vector<char*> args = NullTerminated(argv);
  const std::vector<std::string> variables = Environment(environment);
  std::vector<char*> envp = NullTerminated(variables);
  pid_t pid;
  const int error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    return absl::InternalError(fmt::format("cannot start {}: {}", argv[0], std::strerror(error)));
  }
  return ChildProcess(pid, std::move(our_in), std::move(our_out), log);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      in_(std::move(other.in_)),
      out_(std::move(other.out_)),
      log_(std::move(other.log_)),
      buffered_(std::move(other.buffered_)) {}

ChildProcess::~ChildProcess() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

absl::Status ChildProcess::SendLine(std::string_view line) {
  const std::string text = std::string(line) + "\n";
  if (write(in_.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return Errno(fmt::format("cannot tell pid {} '{}' (log: {})", pid_, line, log_));
  }
  return absl::OkStatus();
}

absl::Status ChildProcess::AwaitLine(std::string_view wanted, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    for (size_t end; (end = buffered_.find('\n')) != std::string::npos;) {
      const std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 1);
      if (line == wanted) return absl::OkStatus();
    }
    const absl::Duration left = deadline - absl::Now();
    pollfd fd{.fd = out_.get(), .events = POLLIN, .revents = 0};
    const int ready = left > absl::ZeroDuration()
                          ? poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1)
                          : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return absl::DeadlineExceededError(fmt::format("pid {} did not print {} within {} (log: {})",
                                                     pid_, wanted, absl::FormatDuration(timeout),
                                                     log_));
    }
    char chunk[4096];
    const ssize_t n = read(out_.get(), chunk, sizeof(chunk));
    if (n <= 0) {
      return absl::FailedPreconditionError(
          fmt::format("pid {} ended its output before printing {} (log: {})", pid_, wanted, log_));
    }
    buffered_.append(chunk, n);
  }
}

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) return Errno(fmt::format("waitpid {}", pid_));
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      return absl::DeadlineExceededError(
          fmt::format("pid {} did not exit within {} (log: {}); killed", std::exchange(pid_, -1),
                      absl::FormatDuration(timeout), log_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return ExitStatus(status);
}

absl::StatusOr<int> ChildProcess::Terminate(absl::Duration timeout) {
  kill(pid_, SIGTERM);
  return Wait(timeout);
}

}  // namespace tally::bench
