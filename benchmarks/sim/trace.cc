// Kernel traces in JSON: one object per job with its kernels in launch order; durations in
// microseconds. Unknown fields are refused so that a misspelt field is not silently ignored.
#include "benchmarks/sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/status.h"

namespace tally::sim {
namespace {

using nlohmann::json;

Duration Micros(double us) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::micro>(us));
}
double ToMicros(Duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

json DimToJson(const scheduler::Dim3& d) { return json::array({d.x, d.y, d.z}); }

absl::StatusOr<scheduler::Dim3> DimFromJson(const json& j, std::string_view what) {
  if (j.is_number_unsigned()) return scheduler::Dim3{j.get<uint32_t>(), 1, 1};
  if (!j.is_array() || j.empty() || j.size() > 3) {
    return absl::InvalidArgumentError(fmt::format("{}: expected 1 to 3 dimensions", what));
  }
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_unsigned() || j[i].get<uint64_t>() == 0) {
      return absl::InvalidArgumentError(fmt::format("{}: dimensions are positive integers", what));
    }
    v[i] = j[i].get<uint32_t>();
  }
  return scheduler::Dim3{v[0], v[1], v[2]};
}

absl::Status CheckFields(const json& j, const std::set<std::string>& known, std::string_view what) {
  for (const auto& [key, value] : j.items()) {
    if (!known.contains(key)) {
      return absl::InvalidArgumentError(fmt::format("{}: unknown field '{}'", what, key));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TraceKernel> KernelFromJson(const json& j, size_t index) {
  const std::string what = fmt::format("kernel {}", index);
  if (!j.is_object()) return absl::InvalidArgumentError(what + ": expected an object");
  TALLY_RETURN_IF_ERROR(
      CheckFields(j,
                  {"name", "grid", "block", "registers", "shared_bytes", "block_us", "ptb_slowdown",
                   "sliced_slowdown", "transformable", "interference"},
                  what));
  if (!j.contains("grid") || !j.contains("block") || !j.contains("block_us")) {
    return absl::InvalidArgumentError(what + ": grid, block and block_us are required");
  }
  TraceKernel k;
  k.name = j.value("name", fmt::format("kernel{}", index));
  TALLY_ASSIGN_OR_RETURN(k.grid, DimFromJson(j["grid"], what + " grid"));
  TALLY_ASSIGN_OR_RETURN(k.block, DimFromJson(j["block"], what + " block"));
  k.registers_per_thread = j.value("registers", 32u);
  k.shared_bytes = j.value("shared_bytes", 0u);
  const double block_us = j["block_us"].get<double>();
  if (!(block_us > 0)) return absl::InvalidArgumentError(what + ": block_us must be positive");
  k.block_time = Micros(block_us);
  k.ptb_slowdown = j.value("ptb_slowdown", 1.05);
  k.sliced_slowdown = j.value("sliced_slowdown", 1.0);
  if (!(k.ptb_slowdown >= 1.0) || !(k.sliced_slowdown >= 1.0)) {
    return absl::InvalidArgumentError(what + ": slowdowns are factors of at least 1");
  }
  k.transformable = j.value("transformable", true);
  k.interference = j.value("interference", TraceKernel::kDefaultInterference);
  if (!(k.interference >= 0 && k.interference <= 10)) {
    return absl::InvalidArgumentError(what + ": interference is between 0 and 10");
  }
  return k;
}

}  // namespace

absl::StatusOr<JobTrace> ParseTrace(std::string_view json_text) {
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("trace: not a JSON object");
  }
  try {
    TALLY_RETURN_IF_ERROR(CheckFields(
        j, {"name", "kind", "source", "generated_by", "launch_gap_us", "kernels"}, "trace"));
    JobTrace trace;
    trace.name = j.value("name", "");
    trace.kind = j.value("kind", "");
    trace.source = j.value("source", "");
    trace.generated_by = j.value("generated_by", "");
    trace.launch_gap = Micros(j.value("launch_gap_us", 0.0));
    if (trace.name.empty()) return absl::InvalidArgumentError("trace: 'name' is required");
    if (trace.kind != "inference" && trace.kind != "training") {
      return absl::InvalidArgumentError("trace: 'kind' is 'inference' or 'training'");
    }
    if (!j.contains("kernels") || !j["kernels"].is_array() || j["kernels"].empty()) {
      return absl::InvalidArgumentError("trace: 'kernels' must be a non-empty array");
    }
    for (size_t i = 0; i < j["kernels"].size(); ++i) {
      TALLY_ASSIGN_OR_RETURN(TraceKernel k, KernelFromJson(j["kernels"][i], i));
      trace.kernels.push_back(std::move(k));
    }
    return trace;
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("trace: {}", e.what()));
  }
}

std::string TraceToJson(const JobTrace& trace) {
  json kernels = json::array();
  for (const TraceKernel& k : trace.kernels) {
    kernels.push_back({{"name", k.name},
                       {"grid", DimToJson(k.grid)},
                       {"block", DimToJson(k.block)},
                       {"registers", k.registers_per_thread},
                       {"shared_bytes", k.shared_bytes},
                       {"block_us", std::round(ToMicros(k.block_time) * 1000) / 1000},
                       {"ptb_slowdown", k.ptb_slowdown},
                       {"sliced_slowdown", k.sliced_slowdown},
                       {"transformable", k.transformable},
                       {"interference", k.interference}});
  }
  json j = {{"name", trace.name},
            {"kind", trace.kind},
            {"source", trace.source},
            {"generated_by", trace.generated_by},
            {"launch_gap_us", ToMicros(trace.launch_gap)},
            {"kernels", std::move(kernels)}};
  // One kernel per line: diffs of regenerated traces stay readable.
  std::string out = "{\n";
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "kernels") continue;
    out += fmt::format("  {}: {},\n", json(it.key()).dump(), it.value().dump());
  }
  out += "  \"kernels\": [\n";
  const json& ks = j["kernels"];
  for (size_t i = 0; i < ks.size(); ++i) {
    out += "    " + ks[i].dump() + (i + 1 < ks.size() ? ",\n" : "\n");
  }
  out += "  ]\n}\n";
  return out;
}

absl::StatusOr<JobTrace> LoadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("cannot read trace {}", path));
  std::stringstream text;
  text << in.rdbuf();
  auto trace = ParseTrace(text.str());
  if (!trace.ok()) {
    return absl::InvalidArgumentError(path + ": " + std::string(trace.status().message()));
  }
  return trace;
}

absl::Status SaveTrace(const JobTrace& trace, const std::string& path) {
  std::ofstream out(path);
  out << TraceToJson(trace);
  if (!out) return absl::InternalError(fmt::format("cannot write trace {}", path));
  return absl::OkStatus();
}

absl::Status ValidateTrace(const JobTrace& trace, const DeviceSpec& device) {
  for (size_t i = 0; i < trace.kernels.size(); ++i) {
    const TraceKernel& k = trace.kernels[i];
    if (ResidentBlocksPerSm(device, k.resources()) == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "trace {}: kernel {} ({}) does not fit on an SM of {} (threads {}, registers {}, "
          "shared memory {} bytes)",
          trace.name, i, k.name, device.name, k.block.Count(), k.registers_per_thread,
          k.shared_bytes));
    }
  }
  return absl::OkStatus();
}

Duration AloneTime(const JobTrace& trace, const DeviceSpec& device) {
  Time end{0};
  for (size_t i = 0; i < trace.kernels.size(); ++i) {
    const TraceKernel& k = trace.kernels[i];
    const uint64_t capacity =
        uint64_t{ResidentBlocksPerSm(device, k.resources())} * device.sm_count;
    const uint64_t waves = (k.grid.Count() + capacity - 1) / capacity;
    const Time submitted = Time{0} + trace.launch_gap * static_cast<int64_t>(i);
    end = std::max(end, submitted + device.launch_latency) + k.block_time * waves;
  }
  return end - Time{0} + device.completion_latency;
}

}  // namespace tally::sim
