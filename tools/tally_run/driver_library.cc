// The libcuda.so.1 directory: under the user's private Tally directory (ipc/socket_path.h), named
// by a hash of the shim's real path; the symlink is replaced atomically when it points elsewhere.
#include "tools/tally_run/driver_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/socket_path.h"

namespace tally::tools {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrFormat("%s: %s", what, std::strerror(errno)));
}

std::string LinkTarget(const std::string& link) {
  char target[PATH_MAX];
  const ssize_t n = readlink(link.c_str(), target, sizeof(target));
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

}  // namespace

bool DriverLibraryInstalled() {
  // Loading does not initialise the driver; tally-run execs the program right after.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

absl::StatusOr<std::string> DriverShimDirectory(const std::string& shim) {
  char resolved[PATH_MAX];
  if (realpath(shim.c_str(), resolved) == nullptr) return Errno("realpath(" + shim + ")");
  const std::string target = resolved;
  TALLY_ASSIGN_OR_RETURN(const std::string base,
                         ipc::RuntimeDirectory(ipc::DirectoryMode::kCreate));
  const std::string dir =
      absl::StrFormat("%s/driver-%016x", base, std::hash<std::string>{}(target));
  TALLY_RETURN_IF_ERROR(ipc::EnsurePrivateDirectory(dir, ipc::DirectoryMode::kCreate));
  const std::string link = dir + "/libcuda.so.1";
  if (LinkTarget(link) == target) return dir;
  const std::string temporary = absl::StrFormat("%s.%d", link, getpid());
  unlink(temporary.c_str());
  if (symlink(target.c_str(), temporary.c_str()) != 0) return Errno("symlink(" + temporary + ")");
  if (rename(temporary.c_str(), link.c_str()) != 0) return Errno("rename(" + temporary + ")");
  return dir;
}

}  // namespace tally::tools
