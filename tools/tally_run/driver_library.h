// Makes programs that need libcuda.so.1 reach the shim on a machine without an NVIDIA driver:
// a program linked with -lcuda (DT_NEEDED libcuda.so.1) could not even start there, and
// dlopen("libcuda.so.1") would fail. tally-run puts a private directory holding a libcuda.so.1
// symlink to the shim first on LD_LIBRARY_PATH: the dynamic loader finds the file under that
// name, recognises it as the already preloaded shim (same file) and maps nothing twice. With a
// driver installed nothing is added (children such as nvidia-smi keep the real driver): the
// shim itself answers dlopen/dlsym of the driver library (client/driver_interposer.cc).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tally::tools {

// Whether the dynamic loader finds an NVIDIA driver library (libcuda.so.1).
bool DriverLibraryInstalled();

// The directory (created if needed, private to the user) whose libcuda.so.1 is a symlink to
// `shim`; one per shim, so that different builds never share it.
absl::StatusOr<std::string> DriverShimDirectory(const std::string& shim);

}  // namespace tally::tools
