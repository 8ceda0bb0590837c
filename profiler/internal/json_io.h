// The JSON spelling of the profiler's values (forms, dimensions, kernel hashes), shared by the
// cache file and the `tally-ctl profiles` listing, and checked readers for untrusted JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/types.h"

namespace tally::profiler::internal {

// {"kind": "original"}, {"kind": "sliced", "slices": k} or {"kind": "ptb", "workers": w}.
nlohmann::json FormJson(const scheduler::LaunchForm& form);
// [x, y, z].
nlohmann::json Dim3Json(const scheduler::Dim3& dim);
// "0x" and 16 hexadecimal digits: JSON numbers are doubles to many readers, which would round
// a 64-bit hash.
std::string KernelHex(KernelId kernel);

// `items` as a JSON array with one compact item per line (and a final newline): readable and
// line-diffable, unlike a pretty-printed dump, which spreads [x, y, z] over five lines. Bytes
// that are not UTF-8 (names come from applications' PTX) are replaced rather than fatal.
std::string ArrayOnePerLine(std::span<const nlohmann::json> items);

// Readers of an untrusted document: InvalidArgument naming the place (`where`, e.g.
// "profiles[2].grid") and what is wrong with it.
absl::StatusOr<scheduler::LaunchForm> ParseForm(const nlohmann::json& value,
                                                std::string_view where);
absl::StatusOr<scheduler::Dim3> ParseDim3(const nlohmann::json& value, std::string_view where);
absl::StatusOr<KernelId> ParseKernelHex(const nlohmann::json& value, std::string_view where);
// The member `key` of the object `value`.
absl::StatusOr<const nlohmann::json*> Member(const nlohmann::json& value, std::string_view where,
                                             const char* key);
absl::StatusOr<uint64_t> ParseUnsigned(const nlohmann::json& value, std::string_view where,
                                       uint64_t max);
absl::StatusOr<int32_t> ParseInt32(const nlohmann::json& value, std::string_view where);
absl::StatusOr<bool> ParseBool(const nlohmann::json& value, std::string_view where);
absl::StatusOr<std::string> ParseString(const nlohmann::json& value, std::string_view where);
// A duration in nanoseconds: a non-negative integer.
absl::StatusOr<scheduler::Duration> ParseNanoseconds(const nlohmann::json& value,
                                                     std::string_view where);

}  // namespace tally::profiler::internal
