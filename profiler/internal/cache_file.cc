// Encoding and checked decoding of the profile cache (format version 1):
//   {"format": "tally-profiles", "version": 1,
//    "device": {"name", "sm_count", "compute_capability", "driver_version", "transform_version"},
//    "profiles": [{"kernel": "0x<16 hex digits>", "name", "grid": [x, y, z], "block": [x, y, z],
//                  "shared_bytes", "sliceable", "preemptible", "resident_per_sm", "sm_count",
//                  "original_ns": [t, ...],
//                  "forms": [{"form": {"kind", ...}, "time_ns": [...], "turnaround_ns": [...]}]}]}
// Samples are the last few measurements, oldest first, in nanoseconds.
#include "profiler/internal/cache_file.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "common/status.h"
#include "fmt/format.h"
#include "profiler/internal/json_io.h"

namespace tally::profiler::internal {

using nlohmann::json;
using scheduler::KernelInfo;
using scheduler::LaunchForm;

namespace {

constexpr const char* kFormatName = "tally-profiles";
// Far above any device's (32 on current GPUs): a larger value is a damaged file, and would make
// the candidates list huge.
constexpr uint64_t kMaxResidentPerSm = 1024;
constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

json SamplesJson(std::span<const Duration> samples) {
  json out = json::array();
  for (Duration sample : samples) out.push_back(sample.count());
  return out;
}

json ProfileJson(const ShapeProfile& profile) {
  const KernelInfo& info = profile.info();
  json forms = json::array();
  for (const ShapeProfile::Form& form : profile.forms()) {
    if (form.samples.empty()) continue;
    forms.push_back({{"form", FormJson(form.form)},
                     {"time_ns", SamplesJson(form.samples.times())},
                     {"turnaround_ns", SamplesJson(form.samples.turnarounds())}});
  }
  return {{"kernel", KernelHex(info.shape.kernel)},
          {"name", profile.name()},
          {"grid", Dim3Json(info.shape.grid)},
          {"block", Dim3Json(info.shape.block)},
          {"shared_bytes", info.shape.shared_bytes},
          {"sliceable", info.sliceable},
          {"preemptible", info.preemptible},
          {"resident_per_sm", info.resident_per_sm},
          {"sm_count", info.sm_count},
          {"original_ns", SamplesJson(profile.original().times())},
          {"forms", std::move(forms)}};
}

// The members of one JSON object, read with the place of each in error messages.
class Reader {
 public:
  Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  std::string At(const char* key) const { return fmt::format("{}.{}", where_, key); }
  absl::StatusOr<const json*> Get(const char* key) const { return Member(object_, where_, key); }

  absl::StatusOr<uint64_t> Unsigned(const char* key, uint64_t max = kMaxU32) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    return ParseUnsigned(*value, At(key), max);
  }
  absl::StatusOr<int32_t> Int32(const char* key) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    return ParseInt32(*value, At(key));
  }
  absl::StatusOr<bool> Bool(const char* key) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    return ParseBool(*value, At(key));
  }
  absl::StatusOr<std::string> String(const char* key) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    return ParseString(*value, At(key));
  }
  absl::StatusOr<scheduler::Dim3> Dim3(const char* key) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    return ParseDim3(*value, At(key));
  }
  // An array of at most kKeptSamples durations; `at_least_one` for a form's samples.
  absl::StatusOr<std::vector<Duration>> Durations(const char* key, bool at_least_one) const {
    TALLY_ASSIGN_OR_RETURN(const json* value, Get(key));
    const std::string where = At(key);
    if (!value->is_array()) return absl::InvalidArgumentError(where + ": not an array");
    if (value->size() > kKeptSamples || (at_least_one && value->empty())) {
      return absl::InvalidArgumentError(
          fmt::format("{}: {} samples, not 1 to {}", where, value->size(), kKeptSamples));
    }
    std::vector<Duration> samples;
    for (size_t i = 0; i < value->size(); ++i) {
      TALLY_ASSIGN_OR_RETURN(const Duration sample,
                             ParseNanoseconds((*value)[i], fmt::format("{}[{}]", where, i)));
      samples.push_back(sample);
    }
    return samples;
  }

 private:
  const json& object_;
  std::string where_;
};

absl::StatusOr<DeviceIdentity> ParseDevice(const Reader& device) {
  DeviceIdentity identity;
  TALLY_ASSIGN_OR_RETURN(identity.name, device.String("name"));
  TALLY_ASSIGN_OR_RETURN(identity.sm_count, device.Unsigned("sm_count"));
  TALLY_ASSIGN_OR_RETURN(identity.compute_capability, device.Unsigned("compute_capability"));
  TALLY_ASSIGN_OR_RETURN(identity.driver_version, device.Int32("driver_version"));
  TALLY_ASSIGN_OR_RETURN(identity.transform_version, device.Unsigned("transform_version"));
  return identity;
}

absl::StatusOr<ShapeProfile> ParseProfile(const Reader& profile) {
  KernelInfo info;
  TALLY_ASSIGN_OR_RETURN(const json* kernel, profile.Get("kernel"));
  TALLY_ASSIGN_OR_RETURN(info.shape.kernel, ParseKernelHex(*kernel, profile.At("kernel")));
  TALLY_ASSIGN_OR_RETURN(info.shape.grid, profile.Dim3("grid"));
  TALLY_ASSIGN_OR_RETURN(info.shape.block, profile.Dim3("block"));
  TALLY_ASSIGN_OR_RETURN(info.shape.shared_bytes, profile.Unsigned("shared_bytes"));
  TALLY_ASSIGN_OR_RETURN(info.sliceable, profile.Bool("sliceable"));
  TALLY_ASSIGN_OR_RETURN(info.preemptible, profile.Bool("preemptible"));
  TALLY_ASSIGN_OR_RETURN(info.resident_per_sm,
                         profile.Unsigned("resident_per_sm", kMaxResidentPerSm));
  TALLY_ASSIGN_OR_RETURN(info.sm_count, profile.Unsigned("sm_count"));
  ShapeProfile result(info);
  TALLY_ASSIGN_OR_RETURN(const std::string name, profile.String("name"));
  result.set_name(name);
  TALLY_ASSIGN_OR_RETURN(const std::vector<Duration> original,
                         profile.Durations("original_ns", /*at_least_one=*/false));
  for (Duration time : original) result.Record({LaunchForm::Original(), time, time});
  TALLY_ASSIGN_OR_RETURN(const json* forms, profile.Get("forms"));
  if (!forms->is_array()) return absl::InvalidArgumentError(profile.At("forms") + ": not an array");
  for (size_t i = 0; i < forms->size(); ++i) {
    const Reader form((*forms)[i], fmt::format("{}[{}]", profile.At("forms"), i));
    TALLY_ASSIGN_OR_RETURN(const json* form_value, form.Get("form"));
    TALLY_ASSIGN_OR_RETURN(const LaunchForm launch_form, ParseForm(*form_value, form.At("form")));
    TALLY_ASSIGN_OR_RETURN(const std::vector<Duration> times, form.Durations("time_ns", true));
    TALLY_ASSIGN_OR_RETURN(const std::vector<Duration> turnarounds,
                           form.Durations("turnaround_ns", true));
    if (times.size() != turnarounds.size()) {
      return absl::InvalidArgumentError(form.where() + ": as many times as turnarounds needed");
    }
    for (size_t s = 0; s < times.size(); ++s)
      result.Record({launch_form, times[s], turnarounds[s]});
  }
  return result;
}

}  // namespace

std::string DescribeDevice(const DeviceIdentity& device) {
  return fmt::format("'{}' ({} SMs, compute {}.{}, driver {}, transform version {})", device.name,
                     device.sm_count, device.compute_capability / 10,
                     device.compute_capability % 10, device.driver_version,
                     device.transform_version);
}

std::string EncodeCache(const DeviceIdentity& device, std::span<const ShapeProfile> profiles) {
  std::vector<const ShapeProfile*> sorted;
  for (const ShapeProfile& profile : profiles) sorted.push_back(&profile);
  std::sort(sorted.begin(), sorted.end(), [](const ShapeProfile* a, const ShapeProfile* b) {
    return ShapeOrder(a->info().shape) < ShapeOrder(b->info().shape);
  });
  std::vector<json> list;
  for (const ShapeProfile* profile : sorted) list.push_back(ProfileJson(*profile));
  const json header = {{"format", kFormatName},
                       {"version", kCacheFormatVersion},
                       {"device",
                        {{"name", device.name},
                         {"sm_count", device.sm_count},
                         {"compute_capability", device.compute_capability},
                         {"driver_version", device.driver_version},
                         {"transform_version", device.transform_version}}}};
  // The header on the first line, then one profile per line; "profiles" goes last.
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.pop_back();  // the header's closing brace
  return text + ",\"profiles\":" + ArrayOnePerLine(list) + "}\n";
}

absl::StatusOr<std::vector<ShapeProfile>> DecodeCache(std::string_view text,
                                                      const DeviceIdentity& device) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& error) {
    // nlohmann reports parse errors only as exceptions; this is the one place they end.
    return absl::InvalidArgumentError(fmt::format("not valid JSON ({})", error.what()));
  }
  const Reader top(document, "file");
  TALLY_ASSIGN_OR_RETURN(const std::string format, top.String("format"));
  if (format != kFormatName) {
    return absl::InvalidArgumentError(fmt::format("not a profile cache (format \"{}\")", format));
  }
  TALLY_ASSIGN_OR_RETURN(const uint64_t version, top.Unsigned("version"));
  if (version != kCacheFormatVersion) {
    return absl::InvalidArgumentError(fmt::format(
        "unknown format version {} (this server reads {})", version, kCacheFormatVersion));
  }
  TALLY_ASSIGN_OR_RETURN(const json* device_value, top.Get("device"));
  TALLY_ASSIGN_OR_RETURN(const DeviceIdentity written_for,
                         ParseDevice(Reader(*device_value, top.At("device"))));
  if (!(written_for == device)) {
    return absl::InvalidArgumentError(fmt::format(
        "written for {}, not for this {}", DescribeDevice(written_for), DescribeDevice(device)));
  }
  TALLY_ASSIGN_OR_RETURN(const json* list, top.Get("profiles"));
  if (!list->is_array()) return absl::InvalidArgumentError("file.profiles: not an array");
  std::vector<ShapeProfile> profiles;
  absl::flat_hash_set<scheduler::KernelShape> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const Reader profile((*list)[i], fmt::format("file.profiles[{}]", i));
    TALLY_ASSIGN_OR_RETURN(ShapeProfile parsed, ParseProfile(profile));
    if (!seen.insert(parsed.info().shape).second) {
      return absl::InvalidArgumentError(profile.where() + ": a launch configuration listed twice");
    }
    profiles.push_back(std::move(parsed));
  }
  return profiles;
}

}  // namespace tally::profiler::internal
