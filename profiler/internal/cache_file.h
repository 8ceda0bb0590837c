// The profile cache file's contents: what a Profiler saves and loads (profiler/README.md, "The
// cache").
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "profiler/internal/shape_profile.h"
#include "profiler/types.h"

namespace tally::profiler::internal {

// Bumped when the meaning of the file changes; files of another version are not read.
inline constexpr uint32_t kCacheFormatVersion = 1;

// The cache file's text: the measurements of `profiles` that have any, for `device`, in a stable
// order.
std::string EncodeCache(const DeviceIdentity& device, std::span<const ShapeProfile> profiles);

// The profiles in a cache file's text. InvalidArgument saying why for a file that is not valid
// JSON, has the wrong structure, types or values (negative times, too many samples, a shape
// listed twice), another format version, or was written for another device identity: such a
// file is not trusted in part. Samples of forms that are no longer candidates are dropped.
absl::StatusOr<std::vector<ShapeProfile>> DecodeCache(std::string_view text,
                                                      const DeviceIdentity& device);

// For log lines: "'NVIDIA H100' (132 SMs, compute 9.0, driver 13000, transform version 1)".
std::string DescribeDevice(const DeviceIdentity& device);

}  // namespace tally::profiler::internal
