// File reads and atomic replacement with POSIX calls, every failure named with its call and path.
#include "profiler/internal/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/status.h"
#include "fmt/format.h"

namespace tally::profiler::internal {
namespace {

absl::Status Errno(std::string_view call, const std::string& path) {
  return absl::ErrnoToStatus(errno, fmt::format("{}({})", call, path));
}

// Closes `fd` whatever happens; the error of close(2) counts, since a file system may report a
// failed write only there.
class File {
 public:
  File(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  absl::Status Close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? absl::OkStatus() : Errno("close", path_);
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Errno("open", path);
  File file(fd, path);
  std::string contents;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("read", path);
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  TALLY_RETURN_IF_ERROR(file.Close());
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::filesystem::path target(path);
  const std::filesystem::path directory =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(),
                               fmt::format("creating the directory {}", directory.string()));
  }
  std::string temporary = (directory / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) return Errno("mkostemp", temporary);
  File file(fd, temporary);
  absl::Status status;
  for (size_t done = 0; status.ok() && done < contents.size();) {
    const ssize_t n = ::write(file.fd(), contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Errno("write", temporary);
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (status.ok()) status = file.Close();
  if (status.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    status = Errno("rename", temporary + ", " + path);
  }
  if (!status.ok()) ::unlink(temporary.c_str());
  return status;
}

}  // namespace tally::profiler::internal
