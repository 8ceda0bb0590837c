// Whole-file reads, and replacements that readers never see half-written.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tally::profiler::internal {

// The file's contents; NotFound when it does not exist.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Replaces (or creates) `path` with `contents`: they go to a temporary file in the same
// directory (so that the rename stays on one file system, where it is atomic), which is then
// renamed over `path`. Missing directories are created. On failure `path` is left as it was and
// the temporary file is removed. Not synced to disk: a file damaged by a power loss is
// detected when read, and the caller need not wait for the disk.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace tally::profiler::internal
