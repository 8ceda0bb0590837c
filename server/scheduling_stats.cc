// The log form of a client's scheduling counters.
#include "server/scheduling_stats.h"

#include "absl/strings/str_format.h"

namespace tally::server {

std::string SchedulingStats::Format() const {
  return absl::StrFormat(
      "%d original, %d sliced (%d slices), %d preemptible (%d preempted, %d preemptions, %d "
      "resumes), %d risky, %d unfit, held %.3f ms",
      original.load(), sliced.load(), slices.load(), preemptible.load(), preempted.load(),
      preemptions.load(), resumes.load(), risky.load(), unfit.load(), held_ns.load() / 1e6);
}

}  // namespace tally::server
