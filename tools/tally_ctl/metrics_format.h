// tally-ctl metrics: a server's status in Prometheus's text exposition format (version 0.0.4),
// for a monitoring system to read. Names carry the `tally_` prefix and base units (bytes,
// seconds); counters end in `_total`. Per-client series are labelled by the client's id alone
// (`client`), with its pid and command in `tally_client_info`; the clients that have left are
// summed under client="departed", so that a counter summed over clients never goes down when
// one leaves.
#pragma once

#include <string>

#include "ipc/control.h"

namespace tally::tools {

std::string FormatStatusMetrics(const ipc::StatusReport& report);

// `text` as a label value between double quotes: backslash, double quote and line feed escaped,
// bytes that are not UTF-8 replaced by U+FFFD.
std::string LabelValue(const std::string& text);

}  // namespace tally::tools
