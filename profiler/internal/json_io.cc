// JSON writers and checked readers for the profiler's values.
#include "profiler/internal/json_io.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "fmt/format.h"

namespace tally::profiler::internal {

using nlohmann::json;
using scheduler::Dim3;
using scheduler::FormKind;
using scheduler::LaunchForm;

namespace {

absl::Status Invalid(std::string_view where, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", where, what));
}

}  // namespace

json FormJson(const LaunchForm& form) {
  switch (form.kind) {
    case FormKind::kSliced:
      return {{"kind", "sliced"}, {"slices", form.slices}};
    case FormKind::kPreemptible:
      return {{"kind", "ptb"}, {"workers", form.workers}};
    case FormKind::kOriginal:
      break;
  }
  return {{"kind", "original"}};
}

json Dim3Json(const Dim3& dim) { return json::array({dim.x, dim.y, dim.z}); }

std::string KernelHex(KernelId kernel) { return fmt::format("0x{:016x}", kernel.value()); }

std::string ArrayOnePerLine(std::span<const json> items) {
  if (items.empty()) return "[]\n";
  std::string out = "[\n";
  for (size_t i = 0; i < items.size(); ++i) {
    out += items[i].dump(-1, ' ', false, json::error_handler_t::replace);
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  return out + "]\n";
}

absl::StatusOr<const json*> Member(const json& value, std::string_view where, const char* key) {
  if (!value.is_object()) return Invalid(where, "not an object");
  auto it = value.find(key);
  if (it == value.end()) return Invalid(where, fmt::format("no \"{}\"", key));
  return &*it;
}

absl::StatusOr<uint64_t> ParseUnsigned(const json& value, std::string_view where, uint64_t max) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return Invalid(where, "negative");
  if (!value.is_number_unsigned()) return Invalid(where, "not an unsigned integer");
  const uint64_t number = value.get<uint64_t>();
  if (number > max) return Invalid(where, fmt::format("{} is over {}", number, max));
  return number;
}

absl::StatusOr<int32_t> ParseInt32(const json& value, std::string_view where) {
  if (!value.is_number_integer()) return Invalid(where, "not an integer");
  if (value.is_number_unsigned() ? value.get<uint64_t>() > std::numeric_limits<int32_t>::max()
                                 : value.get<int64_t>() < std::numeric_limits<int32_t>::min()) {
    return Invalid(where, "out of the range of a 32-bit integer");
  }
  return static_cast<int32_t>(value.get<int64_t>());
}

absl::StatusOr<bool> ParseBool(const json& value, std::string_view where) {
  if (!value.is_boolean()) return Invalid(where, "not a boolean");
  return value.get<bool>();
}

absl::StatusOr<std::string> ParseString(const json& value, std::string_view where) {
  if (!value.is_string()) return Invalid(where, "not a string");
  return value.get<std::string>();
}

absl::StatusOr<scheduler::Duration> ParseNanoseconds(const json& value, std::string_view where) {
  if (value.is_number() && value.get<double>() < 0) return Invalid(where, "negative time");
  TALLY_ASSIGN_OR_RETURN(const uint64_t ns,
                         ParseUnsigned(value, where, std::numeric_limits<int64_t>::max()));
  return scheduler::Duration(static_cast<int64_t>(ns));
}

absl::StatusOr<LaunchForm> ParseForm(const json& value, std::string_view where) {
  TALLY_ASSIGN_OR_RETURN(const json* kind_value, Member(value, where, "kind"));
  TALLY_ASSIGN_OR_RETURN(const std::string kind,
                         ParseString(*kind_value, fmt::format("{}.kind", where)));
  const uint64_t max = std::numeric_limits<uint32_t>::max();
  if (kind == "original") return LaunchForm::Original();
  if (kind == "sliced") {
    TALLY_ASSIGN_OR_RETURN(const json* slices_value, Member(value, where, "slices"));
    TALLY_ASSIGN_OR_RETURN(const uint64_t slices,
                           ParseUnsigned(*slices_value, fmt::format("{}.slices", where), max));
    if (slices == 0) return Invalid(where, "0 slices");
    return LaunchForm::Sliced(static_cast<uint32_t>(slices));
  }
  if (kind == "ptb") {
    TALLY_ASSIGN_OR_RETURN(const json* workers_value, Member(value, where, "workers"));
    TALLY_ASSIGN_OR_RETURN(const uint64_t workers,
                           ParseUnsigned(*workers_value, fmt::format("{}.workers", where), max));
    return LaunchForm::Preemptible(static_cast<uint32_t>(workers));
  }
  return Invalid(where, fmt::format("unknown form \"{}\"", kind));
}

absl::StatusOr<Dim3> ParseDim3(const json& value, std::string_view where) {
  if (!value.is_array() || value.size() != 3) return Invalid(where, "not an array of 3");
  uint32_t parts[3];
  for (size_t i = 0; i < 3; ++i) {
    TALLY_ASSIGN_OR_RETURN(const uint64_t part,
                           ParseUnsigned(value[i], fmt::format("{}[{}]", where, i),
                                         std::numeric_limits<uint32_t>::max()));
    if (part == 0) return Invalid(where, "a dimension of 0");
    parts[i] = static_cast<uint32_t>(part);
  }
  return Dim3{parts[0], parts[1], parts[2]};
}

absl::StatusOr<KernelId> ParseKernelHex(const json& value, std::string_view where) {
  TALLY_ASSIGN_OR_RETURN(const std::string text, ParseString(value, where));
  uint64_t kernel = 0;
  const char* end = text.data() + text.size();
  if (text.size() != 18 || !text.starts_with("0x") ||
      std::from_chars(text.data() + 2, end, kernel, 16).ptr != end) {
    return Invalid(where, "not 0x and 16 hexadecimal digits");
  }
  return KernelId(kernel);
}

}  // namespace tally::profiler::internal
