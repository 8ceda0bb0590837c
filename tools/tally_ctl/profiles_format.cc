// From the wire records back to the profiler's, then its formatting.
#include "tools/tally_ctl/profiles_format.h"

#include "profiler/format.h"

namespace tally::tools {
namespace {

std::vector<profiler::ProfileRecord> Records(std::span<const ipc::ProfileStatus> profiles) {
  std::vector<profiler::ProfileRecord> records;
  records.reserve(profiles.size());
  for (const ipc::ProfileStatus& status : profiles) records.push_back(FromWire(status));
  return records;
}

}  // namespace

profiler::ProfileRecord FromWire(const ipc::ProfileStatus& status) {
  profiler::ProfileRecord record;
  record.shape.kernel = status.kernel;
  record.shape.grid = {status.grid[0], status.grid[1], status.grid[2]};
  record.shape.block = {status.block[0], status.block[1], status.block[2]};
  record.shape.shared_bytes = status.shared_bytes;
  record.kernel_name = status.kernel_name;
  if (status.original_ns >= 0) record.original_time = scheduler::Duration(status.original_ns);
  record.chosen.kind = static_cast<scheduler::FormKind>(status.form);
  record.chosen.slices = status.slices;
  record.chosen.workers = status.workers;
  record.short_turnaround = status.short_turnaround != 0;
  record.candidates = status.candidates;
  record.measured = status.measured;
  record.complete = status.complete != 0;
  if (status.normalized_speed >= 0) record.normalized_speed = status.normalized_speed;
  if (status.turnaround_ns >= 0) record.turnaround = scheduler::Duration(status.turnaround_ns);
  return record;
}

std::string FormatProfilesText(std::span<const ipc::ProfileStatus> profiles) {
  return profiler::FormatProfilesTable(Records(profiles));
}

std::string FormatProfilesJson(std::span<const ipc::ProfileStatus> profiles) {
  return profiler::FormatProfilesJson(Records(profiles));
}

}  // namespace tally::tools
