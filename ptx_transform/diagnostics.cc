// Diagnostic collection and formatting.
#include "ptx_transform/diagnostics.h"

#include <fmt/format.h>

namespace tally::ptx {
namespace {
// Hostile input can produce an error per token; keep memory bounded but keep counting.
constexpr size_t kMaxStoredDiagnostics = 200;
}  // namespace

void DiagnosticSink::Report(Severity severity, SourceLocation location, std::string message) {
  if (severity == Severity::kError) ++error_count_;
  if (diagnostics_.size() < kMaxStoredDiagnostics) {
    diagnostics_.push_back({severity, location, std::move(message)});
  }
}

std::string DiagnosticSink::Format(std::string_view file_name) const {
  static constexpr const char* kSeverityNames[] = {"note", "warning", "error"};
  std::string out;
  for (const auto& d : diagnostics_) {
    out += fmt::format("{}:{}:{}: {}: {}\n", file_name, d.location.line, d.location.column,
                       kSeverityNames[static_cast<int>(d.severity)], d.message);
  }
  size_t stored_errors = 0;
  for (const auto& d : diagnostics_) stored_errors += d.severity == Severity::kError;
  if (error_count_ > stored_errors) {
    out += fmt::format("{}: {} more errors not shown\n", file_name, error_count_ - stored_errors);
  }
  return out;
}

}  // namespace tally::ptx
