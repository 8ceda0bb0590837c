// tally-run --device: which of the servers in the run directory runs the job. INDEX or UUID: the
// server whose status reports that device. auto: the rule below, stated in --help and
// docs/operations.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/client_priority.h"
#include "common/device_uuid.h"
#include "ipc/control.h"

namespace tally::tools {

// A server that answered its status request.
struct ServerCandidate {
  std::string socket;
  ipc::StatusReport status;
};

// What the job asks for: its priority (unset counts as best-effort) and its memory limit.
struct JobDemand {
  ClientPriority priority = ClientPriority::Unset();
  std::optional<uint64_t> memory_bytes;
};

struct ServerChoice {
  size_t index;        // into the candidates
  std::string reason;  // one line: why this one
};

// The server of the selected device; NotFound listing the devices served when none is.
absl::StatusOr<ServerChoice> FindServerOfDevice(const std::vector<ServerCandidate>& servers,
                                                const DeviceSelector& device);

// --device auto. Among the servers that accept clients (not draining, below --max-clients) and,
// when the job gives a memory limit, have that much device memory free (if none has, among all
// that accept clients): the fewest connected clients at or above the job's priority, then the
// most free device memory, then the lowest device ordinal. Unavailable when none accepts.
absl::StatusOr<ServerChoice> ChooseServer(const std::vector<ServerCandidate>& servers,
                                          const JobDemand& job);

// The socket for --device `device` (auto, an ordinal or a UUID) among the servers answering
// in the run directory (ipc::RunDirectory); with `explain`, says on stderr which one and why.
absl::StatusOr<std::string> SelectServer(std::string_view device, const JobDemand& job,
                                         bool explain);

}  // namespace tally::tools
