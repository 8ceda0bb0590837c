// tally-ctl status's two outputs: a table for people and JSON with stable keys for scripts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/control.h"

namespace tally::tools {

// A client's priority as people write it: "high", "best-effort", a level, or "unset".
std::string PriorityName(const ipc::ClientStatus& client);

std::string FormatStatusText(const ipc::StatusReport& report, const std::string& socket);
std::string FormatStatusJson(const ipc::StatusReport& report, const std::string& socket);
// The server's code cache: one line ("code cache: ..."), or a JSON object (status's
// "code_cache", tally-ctl cache --json).
std::string FormatCodeCacheText(const ipc::CodeCacheStatus& cache);
std::string FormatCodeCacheJson(const ipc::CodeCacheStatus& cache);
// One grant as a JSON object (status's "grants", tally-ctl grant --json).
std::string FormatGrantJson(const ipc::GrantStatus& grant);

// tally-ctl status --all: each server's status, or for a socket nobody answers on, that it is
// not running and why. Text: one section per server; JSON: an array of FormatStatusJson's
// objects and, for those not running, {"socket", "running": false, "error"}.
struct SocketStatus {
  std::string socket;
  absl::StatusOr<ipc::StatusReport> report;
};
std::string FormatAllStatusText(const std::vector<SocketStatus>& servers);
std::string FormatAllStatusJson(const std::vector<SocketStatus>& servers);

// `text` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string WellFormedUtf8(std::string_view text);

// `text` as a JSON string literal (with the quotes). Bytes that are not UTF-8 become U+FFFD, so
// the output is valid JSON whatever a command line holds.
std::string JsonString(std::string_view text);

}  // namespace tally::tools
