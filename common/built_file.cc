#include "common/built_file.h"

#include <filesystem>
#include <system_error>

namespace tally {

std::string LocateBuiltFile(const BuiltFile& file, std::string_view executable_dir) {
  if (file.build_path.empty()) return {};
  std::error_code error;
  // false, not an error, when the build tree is gone: then this cannot be the build's executable.
  if (executable_dir.empty() ||
      std::filesystem::equivalent(executable_dir, file.build_executable_dir, error)) {
    return std::string(file.build_path);
  }
  return (std::filesystem::path(executable_dir) / file.installed_path).lexically_normal();
}

std::string LocateBuiltFile(const BuiltFile& file) {
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  return LocateBuiltFile(file, error ? std::string() : executable.parent_path().string());
}

}  // namespace tally
