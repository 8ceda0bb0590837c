// ptxas discovery and invocation (fork/exec with stderr captured through a pipe).
#include "ptx_transform/cli/ptxas.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace tally::ptx {
namespace {

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

}  // namespace

std::optional<std::string> FindPtxas() {
  if (const char* p = std::getenv("TALLY_PTXAS"); p != nullptr && IsExecutable(p)) return p;
  if (const char* root = std::getenv("TALLY_CUDA_ROOT"); root != nullptr) {
    std::string p = std::string(root) + "/bin/ptxas";
    if (IsExecutable(p)) return p;
  }
  if (IsExecutable("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      std::string p = (dir.empty() ? std::string(".") : dir) + "/ptxas";
      if (IsExecutable(p)) return p;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return std::nullopt;
}

absl::Status RunPtxas(const std::string& ptxas, const std::string& ptx, const std::string& arch) {
  char path[] = "/tmp/tally-ptxas-XXXXXX.ptx";
  int fd = ::mkstemps(path, 4);
  if (fd < 0) return absl::InternalError(fmt::format("mkstemps: {}", std::strerror(errno)));
  ::close(fd);
  {
    std::ofstream file(path, std::ios::binary);
    file << ptx;
    if (!file) {
      ::unlink(path);
      return absl::InternalError(fmt::format("cannot write {}", path));
    }
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    ::unlink(path);
    return absl::InternalError(fmt::format("pipe: {}", std::strerror(errno)));
  }
  std::string arch_flag = "-arch=" + arch;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const char* argv[] = {ptxas.c_str(), arch_flag.c_str(), path, "-o", "/dev/null", nullptr};
    ::execv(ptxas.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  ::close(pipe_fds[1]);
  std::string output;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::unlink(path);
  if (pid < 0) return absl::InternalError(fmt::format("fork: {}", std::strerror(errno)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InvalidArgumentError(
        fmt::format("ptxas {} rejected the printed PTX:\n{}", arch_flag, output));
  }
  return absl::OkStatus();
}

}  // namespace tally::ptx
