// Diagnostics for problems in input (PTX text, fatbins): severity, line:column and a message,
// collected in a sink so that a parser can recover and report every problem it finds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tally::ptx {

// 1-based line and column in the source text; 0 means "unknown".
struct SourceLocation {
  uint32_t line = 0;
  uint32_t column = 0;

  // Locations never take part in IR identity: a module that is printed and parsed again is
  // "the same IR" even though every statement moved.
  friend bool operator==(const SourceLocation&, const SourceLocation&) { return true; }
};

enum class Severity { kNote, kWarning, kError };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLocation location;
  std::string message;
};

class DiagnosticSink {
 public:
  void Report(Severity severity, SourceLocation location, std::string message);
  void Error(SourceLocation location, std::string message) {
    Report(Severity::kError, location, std::move(message));
  }

  bool HasErrors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

  // "file:line:column: error: message" lines, one per diagnostic.
  std::string Format(std::string_view file_name) const;

 private:
  std::vector<Diagnostic> diagnostics_;
  size_t error_count_ = 0;
};

}  // namespace tally::ptx
