// Servers' status in Prometheus's text exposition format (version 0.0.4), for a monitoring
// system to read (tally-ctl metrics, tally-exporter). Names carry the `tally_` prefix and base
// units (bytes, seconds); counters end in `_total`. Every series is labelled by its server's
// socket (`server`); `tally_server_up` says which servers answered. Per-client series are
// labelled by the client's id (`client`, then whatever ClientLabels adds), with its pid and
// command in `tally_client_info`; the clients that have left are summed under
// client="departed", so that a counter summed over clients never goes down when one leaves.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ipc/control.h"

namespace tally::tools {

struct ServerStatus {
  std::string socket;
  std::optional<ipc::StatusReport> report;  // none: the server did not answer
};

// Labels to add to a connected client's series after its `client` label (`name="value"` pairs,
// comma-separated; empty: none), given its server's report: tally-exporter's pod labels.
using ClientLabels =
    std::function<std::string(const ipc::StatusReport& server, const ipc::ClientStatus& client)>;

std::string FormatMetrics(const std::vector<ServerStatus>& servers,
                          const ClientLabels& client_labels = nullptr);

// `text` as a label value between double quotes: backslash, double quote and line feed escaped,
// bytes that are not UTF-8 replaced by U+FFFD.
std::string LabelValue(const std::string& text);

}  // namespace tally::tools
