// tally-ctl profiles: the server's records (ipc::ProfileStatus) as the profiler's own table and
// JSON (profiler/format.h), so that both always print the same columns.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ipc/control.h"
#include "profiler/types.h"

namespace tally::tools {

profiler::ProfileRecord FromWire(const ipc::ProfileStatus& status);
std::string FormatProfilesText(std::span<const ipc::ProfileStatus> profiles);
std::string FormatProfilesJson(std::span<const ipc::ProfileStatus> profiles);

}  // namespace tally::tools
