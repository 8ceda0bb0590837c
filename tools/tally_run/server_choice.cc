// Choosing a server for tally-run --device.
#include "tools/tally_run/server_choice.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ipc/socket_path.h"

namespace tally::tools {
namespace {

std::string DeviceOf(const ServerCandidate& server) {
  return absl::StrFormat("device %d, %s", server.status.server.device_ordinal,
                         FormatDeviceUuid(ipc::DeviceUuidOf(server.status.server)));
}

bool Accepts(const ipc::StatusReply& server, size_t clients) {
  return server.draining == 0 && clients < server.max_clients;
}

// Connected clients the job would share its priority level or yield to (unset: best-effort).
size_t ClientsAtOrAbove(const ipc::StatusReport& status, ClientPriority job) {
  return std::count_if(status.clients.begin(), status.clients.end(),
                       [&](const ipc::ClientStatus& client) {
                         return client.client_priority.ToPriority().level() >= job.level();
                       });
}

std::string MiB(uint64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

absl::StatusOr<ServerChoice> FindServerOfDevice(const std::vector<ServerCandidate>& servers,
                                                const DeviceSelector& device) {
  std::vector<std::string> served;
  for (size_t i = 0; i < servers.size(); ++i) {
    const ipc::StatusReply& server = servers[i].status.server;
    const bool match = device.uuid ? ipc::DeviceUuidOf(server) == *device.uuid
                                   : server.device_ordinal == device.ordinal.value_or(-1);
    if (match) return ServerChoice{i, absl::StrFormat("it serves %s", DeviceOf(servers[i]))};
    served.push_back(absl::StrFormat("%s (%s)", servers[i].socket, DeviceOf(servers[i])));
  }
  return absl::NotFoundError(absl::StrFormat(
      "no server answering serves device %s; the servers are: %s",
      device.uuid ? FormatDeviceUuid(*device.uuid) : absl::StrFormat("%d", *device.ordinal),
      served.empty() ? std::string("none") : absl::StrJoin(served, ", ")));
}

absl::StatusOr<ServerChoice> ChooseServer(const std::vector<ServerCandidate>& servers,
                                          const JobDemand& job) {
  std::vector<size_t> accepting;
  std::vector<size_t> roomy;  // accepting, with the job's memory free
  for (size_t i = 0; i < servers.size(); ++i) {
    const ipc::StatusReport& status = servers[i].status;
    if (!Accepts(status.server, status.clients.size())) continue;
    accepting.push_back(i);
    if (status.server.free_memory >= job.memory_bytes.value_or(0)) roomy.push_back(i);
  }
  if (accepting.empty()) {
    return absl::UnavailableError(
        "no server accepts clients now (each is draining or serves --max-clients clients)");
  }
  const std::vector<size_t>& candidates = roomy.empty() ? accepting : roomy;
  // Smaller is better: fewer clients at or above the job's level, more free memory (its
  // complement sorts the larger first), the lower ordinal.
  const auto rank = [&](size_t i) {
    const ipc::StatusReport& status = servers[i].status;
    return std::make_tuple(ClientsAtOrAbove(status, job.priority), ~status.server.free_memory,
                           status.server.device_ordinal);
  };
  const size_t best = *std::min_element(candidates.begin(), candidates.end(),
                                        [&](size_t a, size_t b) { return rank(a) < rank(b); });
  const ipc::StatusReport& chosen = servers[best].status;
  std::string reason = absl::StrFormat(
      "%d client(s) at or above priority %s, %s free, the best of %d server(s) accepting clients",
      ClientsAtOrAbove(chosen, job.priority), job.priority.ToString(),
      MiB(chosen.server.free_memory), accepting.size());
  if (job.memory_bytes && roomy.empty()) {
    reason += absl::StrFormat("; none has the %s the job asks for free", MiB(*job.memory_bytes));
  }
  return ServerChoice{best, reason};
}

namespace {

// Asks each socket for its status (briefly), trusting whom the job's shim will trust: those that
// answer; for the others a line saying why in `silent`.
std::vector<ServerCandidate> AskServers(const std::vector<std::string>& sockets,
                                        const ipc::ServerTrust& trust,
                                        std::vector<std::string>& silent) {
  std::vector<ServerCandidate> servers;
  for (const std::string& socket : sockets) {
    absl::StatusOr<ipc::StatusReport> status = ipc::QueryStatus(socket, absl::Seconds(2), trust);
    if (status.ok()) {
      servers.push_back({socket, *std::move(status)});
    } else {
      silent.push_back(absl::StrFormat("%s: %s", socket, status.status().message()));
    }
  }
  return servers;
}

}  // namespace

absl::StatusOr<std::string> SelectServer(std::string_view device, const JobDemand& job,
                                         bool explain) {
  std::optional<DeviceSelector> selector;
  if (device != "auto") {
    absl::StatusOr<DeviceSelector> parsed = ParseDeviceSelector(device);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--device wants auto, an ordinal or a UUID: %s", parsed.status().message()));
    }
    selector = *parsed;
  }
  absl::StatusOr<std::string> run_dir = ipc::RunDirectory(ipc::DirectoryMode::kCheckIfPresent);
  if (!run_dir.ok()) return run_dir.status();
  absl::StatusOr<ipc::ServerTrust> trust = ipc::ServerTrust::FromEnvironment();
  if (!trust.ok()) return trust.status();
  std::vector<std::string> silent;
  const std::vector<ServerCandidate> servers =
      AskServers(ipc::ServerSockets(*run_dir), *trust, silent);
  if (servers.empty()) {
    return absl::UnavailableError(absl::StrFormat(
        "no tally-server answers in %s%s; start one per GPU with tally-server --device INDEX",
        *run_dir, silent.empty() ? "" : " (" + absl::StrJoin(silent, "; ") + ")"));
  }
  absl::StatusOr<ServerChoice> choice =
      selector ? FindServerOfDevice(servers, *selector) : ChooseServer(servers, job);
  if (!choice.ok()) return choice.status();
  const ServerCandidate& chosen = servers[choice->index];
  if (explain) {
    std::fprintf(stderr, "tally-run: --device %s: %s (%s): %s\n", std::string(device).c_str(),
                 chosen.socket.c_str(), DeviceOf(chosen).c_str(), choice->reason.c_str());
    for (const std::string& line : silent) {
      std::fprintf(stderr, "tally-run: not answering: %s\n", line.c_str());
    }
  }
  return chosen.socket;
}

}  // namespace tally::tools
