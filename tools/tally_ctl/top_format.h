// tally-ctl top: one sample of a server's clients with their rates over the time since the
// previous status (kernels, preemptions and library calls per second, the share of that time
// their kernels were held), sorted as asked.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ipc/control.h"

namespace tally::tools {

// What the rows are sorted by: the client id ascending, the others descending.
enum class TopSort { kId, kMemory, kKernels, kPreemptions, kHeld };
// "id", "memory", "kernels", "preemptions", "held"; nullopt for another word.
std::optional<TopSort> ParseTopSort(std::string_view word);

// `now`, with each client's rates since `before` (`seconds` earlier); a client that was not in
// `before` is counted from its start.
std::string FormatTop(const ipc::StatusReport& before, const ipc::StatusReport& now, double seconds,
                      TopSort sort);

}  // namespace tally::tools
