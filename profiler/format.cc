// Text and JSON listings of profile records.
#include "profiler/format.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "fmt/format.h"
#include "profiler/internal/json_io.h"

namespace tally::profiler {

using scheduler::FormKind;
using scheduler::LaunchForm;

namespace {

std::string Dim3Text(const scheduler::Dim3& dim) {
  return fmt::format("{}x{}x{}", dim.x, dim.y, dim.z);
}

std::string StatusText(const ProfileRecord& record) {
  if (record.candidates == 0) {
    if (!record.original_time) return "unmeasured";
    return record.short_turnaround ? "short" : "long";
  }
  if (!record.complete) return fmt::format("profiling {}/{}", record.measured, record.candidates);
  return "done";
}

constexpr std::array<const char*, 10> kColumns = {
    "KERNEL", "HASH", "GRID", "BLOCK", "SMEM", "FORM", "ORIGINAL", "SPEED", "TURNAROUND", "STATUS"};
using Row = std::array<std::string, kColumns.size()>;

Row RowOf(const ProfileRecord& record) {
  return {record.kernel_name.empty() ? "?" : record.kernel_name,
          fmt::format("{:016x}", record.shape.kernel.value()),
          Dim3Text(record.shape.grid),
          Dim3Text(record.shape.block),
          std::to_string(record.shape.shared_bytes),
          FormText(record.chosen),
          record.original_time ? DurationText(*record.original_time) : "-",
          record.normalized_speed ? fmt::format("{:.2f}", *record.normalized_speed) : "-",
          record.turnaround ? DurationText(*record.turnaround) : "-",
          StatusText(record)};
}

}  // namespace

std::string FormText(const LaunchForm& form) {
  switch (form.kind) {
    case FormKind::kSliced:
      return fmt::format("sliced:{}", form.slices);
    case FormKind::kPreemptible:
      return form.workers == 0 ? "ptb:full" : fmt::format("ptb:{}", form.workers);
    case FormKind::kOriginal:
      break;
  }
  return "original";
}

std::string DurationText(Duration duration) {
  const auto ns = static_cast<double>(duration.count());
  if (duration < std::chrono::microseconds(1)) return fmt::format("{}ns", duration.count());
  if (duration < std::chrono::milliseconds(1)) return fmt::format("{:.1f}us", ns / 1e3);
  if (duration < std::chrono::seconds(1)) return fmt::format("{:.2f}ms", ns / 1e6);
  return fmt::format("{:.2f}s", ns / 1e9);
}

std::string FormatProfilesTable(std::span<const ProfileRecord> records) {
  std::vector<Row> rows;
  rows.emplace_back();
  std::copy(kColumns.begin(), kColumns.end(), rows.back().begin());
  for (const ProfileRecord& record : records) rows.push_back(RowOf(record));
  std::array<size_t, kColumns.size()> widths{};
  for (const Row& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const Row& row : rows) {
    for (size_t c = 0; c + 1 < row.size(); ++c) {
      out += fmt::format("{:<{}}  ", row[c], widths[c]);
    }
    out += row.back();
    out += '\n';
  }
  return out;
}

std::string FormatProfilesJson(std::span<const ProfileRecord> records) {
  std::vector<nlohmann::json> list;
  for (const ProfileRecord& record : records) {
    nlohmann::json item = {{"kernel", internal::KernelHex(record.shape.kernel)},
                           {"name", record.kernel_name},
                           {"grid", internal::Dim3Json(record.shape.grid)},
                           {"block", internal::Dim3Json(record.shape.block)},
                           {"shared_bytes", record.shape.shared_bytes},
                           {"form", internal::FormJson(record.chosen)},
                           {"short_turnaround", record.short_turnaround},
                           {"candidates", record.candidates},
                           {"measured", record.measured},
                           {"complete", record.complete},
                           {"original_ns", nullptr},
                           {"normalized_speed", nullptr},
                           {"turnaround_ns", nullptr}};
    if (record.original_time) item["original_ns"] = record.original_time->count();
    if (record.normalized_speed) item["normalized_speed"] = *record.normalized_speed;
    if (record.turnaround) item["turnaround_ns"] = record.turnaround->count();
    list.push_back(std::move(item));
  }
  return internal::ArrayOnePerLine(list);
}

}  // namespace tally::profiler
