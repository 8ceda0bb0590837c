// PTX text -> IR. The parser reports every problem as a diagnostic with line:column and
// recovers at the next statement, so one call lists all errors of a file.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "ptx_transform/diagnostics.h"
#include "ptx_transform/ir.h"

namespace tally::ptx {

// Parses `source` into a module. Problems go to `sink`; the returned module holds everything
// that parsed. Callers must check sink.HasErrors() before trusting the result.
Module ParseModule(std::string_view source, DiagnosticSink& sink);

// Convenience: an error status carrying the formatted diagnostics when any error occurred.
absl::StatusOr<Module> ParseModuleOrError(std::string_view source,
                                          std::string_view file_name = "<ptx>");

}  // namespace tally::ptx
