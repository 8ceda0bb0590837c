// What `tally-ctl profiles` prints: the profiler's records as a text table or as JSON.
#pragma once

#include <span>
#include <string>

#include "profiler/types.h"

namespace tally::profiler {

// "original", "sliced:8", "ptb:64", or "ptb:full" for full occupancy (workers 0).
std::string FormText(const scheduler::LaunchForm& form);

// "850ns", "12.5us", "3.25ms", "1.50s".
std::string DurationText(Duration duration);

// A header and one line per record, in columns separated by two spaces: KERNEL (the name, or
// "?" before a measurement named it), HASH, GRID, BLOCK, SMEM, FORM, ORIGINAL, SPEED,
// TURNAROUND, STATUS ("profiling 2/9" while candidates are untried, then "done"; for a kernel
// without transformed forms "unmeasured", "short" or "long"). Unknown values are "-".
std::string FormatProfilesTable(std::span<const ProfileRecord> records);

// A JSON array with one object per line, one per record: kernel (0x and 16 hex digits), name, grid
// and block
// ([x, y, z]), shared_bytes, form ({"kind": ...}), short_turnaround, candidates, measured,
// complete, original_ns, normalized_speed and turnaround_ns (null when unknown).
std::string FormatProfilesJson(std::span<const ProfileRecord> records);

}  // namespace tally::profiler
