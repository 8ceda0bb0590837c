// tally-ctl: inspects and steers a running tally-server over its socket, with control requests
// that never count as a client: `status` (device, backend, clients and what the scheduler did
// for each), `priority CLIENT LEVEL` (a client's priority, while it runs), `limit CLIENT SIZE`
// (a client's device-memory limit, while it runs), `profiles` (what the profiler knows) and
// `metrics` (the status for Prometheus).
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_size.h"
#include "common/client_priority.h"
#include "ipc/control.h"
#include "ipc/socket_path.h"
#include "tools/tally_ctl/metrics_format.h"
#include "tools/tally_ctl/profiles_format.h"
#include "tools/tally_ctl/status_format.h"

namespace {

constexpr char kUsage[] =
    "Usage: tally-ctl status [--json] [--server PATH]\n"
    "       tally-ctl priority CLIENT LEVEL [--server PATH]\n"
    "       tally-ctl limit CLIENT SIZE|none [--server PATH]\n"
    "       tally-ctl profiles [--json] [--server PATH]\n"
    "       tally-ctl metrics [--server PATH]\n"
    "Inspects and steers a running tally-server.\n\n"
    "  status         its device (name, total and free memory), its backend (the emulator or\n"
    "                 NVIDIA's driver) and each connected client: id, pid, priority, device\n"
    "                 memory it has allocated and its limit (in bytes), page-locked memory and\n"
    "                 its limit, streams, events, modules, commands queued but not yet issued,\n"
    "                 command line,\n"
    "                 and what the scheduler did for it: kernels issued in each form (original,\n"
    "                 sliced, preemptible), preemptions, resumptions, background kernels run\n"
    "                 unshaped at a risk, time its kernels were held, measured preemption\n"
    "                 latency (from raising the flag to the kernel's end, on the device),\n"
    "                 and its calls of cuBLAS, cuBLASLt and cuDNN served by Tally's own\n"
    "                 kernels, per library (counted at their first kernel launch)\n"
    "  priority CLIENT LEVEL\n"
    "                 sets the priority of the client with that id (see status) to LEVEL: high,\n"
    "                 best-effort or an integer, higher is more important; effective at the\n"
    "                 scheduler's next decision, not capped by --max-client-priority\n"
    "  limit CLIENT SIZE|none\n"
    "                 sets the device-memory limit of the client with that id to SIZE (512M, 4G,\n"
    "                 1.5GiB, bytes) or removes it; effective at its next allocation and\n"
    "                 cudaMemGetInfo (what it holds beyond a lowered limit stays)\n"
    "  profiles       the launch configurations the profiler knows: kernel, grid, block, shared\n"
    "                 memory, chosen form, original time, normalised speed, turnaround\n"
    "  metrics        the status in Prometheus's text format (every series labelled\n"
    "                 server=PATH): tally_server_up, tally_server_info,\n"
    "                 tally_device_memory[_free]_bytes, tally_clients, tally_client_* per\n"
    "                 connected client (label client=ID; pid, priority and command in\n"
    "                 tally_client_info), and counters tally_kernels_total{form}, tally_*_total\n"
    "                 and tally_library_calls_total{library} per client, the clients that have\n"
    "                 left summed under client=\"departed\"\n\n"
    "  --json         print JSON instead of a table. status: an object with the keys socket,\n"
    "                 server_pid, device {name, total_memory_bytes, free_memory_bytes},\n"
    "                 backend {kind: \"emulator\"|\"nvidia-driver\", description}, departed\n"
    "                 {clients, scheduling {...}, library_calls {...}: the counters below,\n"
    "                 summed over the clients that have left, without held_ns and the\n"
    "                 preemption latencies} and clients\n"
    "                 [{id, pid, command, priority, priority_set, memory_bytes, allocations,\n"
    "                 memory_limit_bytes (null: none), pinned_bytes, pinned_limit_bytes,\n"
    "                 streams, events, modules, queued_commands, scheduling {kernels_original,\n"
    "                 kernels_sliced, slices,\n"
    "                 kernels_preemptible, kernels_preempted, preemptions, resumes,\n"
    "                 risky_launches, unfit_launches (original form: no transformed form\n"
    "                 fits the launch's shared memory or threads), held_ns,\n"
    "                 preemption_latencies,\n"
    "                 preemption_latency_ns_total, preemption_latency_ns_max},\n"
    "                 library_calls {cublas, cublaslt, cudnn}: its calls of these libraries\n"
    "                 served by Tally's own kernels, each counted at its first kernel launch\n"
    "                 (a call that launched nothing is not counted)}];\n"
    "                 profiles: an array of objects, one per launch configuration\n"
    "  --server PATH  the server's socket (default: TALLY_SERVER, else the server's default)\n"
    "  --help         show this help\n\n"
    "Exit status: 0 done, 1 no server answered (or it answered with an error, or has no such\n"
    "client), 2 usage.\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "tally-ctl: %s (see --help)\n", message.c_str());
  return 2;
}

int Fail(const std::string& server, const absl::Status& status) {
  std::fprintf(stderr, "tally-ctl: no answer from a tally-server on %s: %s\n", server.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string server;
  std::vector<std::string> words;  // the command and its operands
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--json") {
      json = true;
    } else if (arg == "--server" && i + 1 < argc) {
      server = argv[++i];
    } else if (arg.starts_with("--server=")) {
      server = arg.substr(9);
    } else if (arg.starts_with("--")) {
      return Usage("unknown option '" + std::string(arg) + "'");
    } else {
      words.emplace_back(arg);
    }
  }
  if (words.empty()) {
    return Usage("no command given; the commands are status, priority, limit, profiles, metrics");
  }
  const std::string& command = words[0];
  const bool targets_client = command == "priority" || command == "limit";
  const size_t operands = targets_client ? 2 : 0;
  if (command != "status" && !targets_client && command != "profiles" && command != "metrics") {
    return Usage("unknown command '" + command + "'");
  }
  if (words.size() != operands + 1) {
    return Usage(command == "priority" ? "priority wants CLIENT and LEVEL"
                 : command == "limit"  ? "limit wants CLIENT and SIZE (or none)"
                                       : "unexpected argument '" + words.back() + "'");
  }
  if (json && (targets_client || command == "metrics")) return Usage(command + " has no --json");
  uint64_t client_id = 0;
  tally::ClientPriority level = tally::ClientPriority::Unset();
  uint64_t memory_limit = tally::ipc::kNoLimit;
  if (targets_client) {
    const std::string& id = words[1];
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos ||
        id.size() > 19) {
      return Usage("CLIENT is a client id as status shows it, not '" + id + "'");
    }
    client_id = std::stoull(id);
  }
  if (command == "limit" && words[2] != "none") {
    auto bytes = tally::ParseByteSize(words[2]);
    if (!bytes.ok()) return Usage("SIZE: " + std::string(bytes.status().message()));
    memory_limit = *bytes;
  }
  if (command == "priority") {
    auto parsed = tally::ClientPriority::Parse(words[2]);
    if (!parsed.ok() || words[2].empty()) {
      return Usage("LEVEL: " + (parsed.ok() ? std::string("empty")
                                            : std::string(parsed.status().message())));
    }
    level = *parsed;
  }
  if (server.empty()) {
    auto path = tally::ipc::ResolveSocketPath(tally::ipc::DirectoryMode::kCheckIfPresent);
    if (!path.ok()) {
      std::fprintf(stderr, "tally-ctl: no tally-server: %s\n",
                   std::string(path.status().message()).c_str());
      return 1;
    }
    server = *path;
  }
  if (command == "priority") {
    auto reply = tally::ipc::SetClientPriority(server, client_id, level.level());
    if (!reply.ok()) return Fail(server, reply.status());
    std::printf("%s\n", reply->message);
    return reply->found != 0 ? 0 : 1;
  }
  if (command == "limit") {
    auto reply = tally::ipc::SetClientMemoryLimit(server, client_id, memory_limit);
    if (!reply.ok()) return Fail(server, reply.status());
    std::printf("%s\n", reply->message);
    return reply->found != 0 ? 0 : 1;
  }
  if (command == "profiles") {
    auto profiles = tally::ipc::QueryProfiles(server);
    if (!profiles.ok()) return Fail(server, profiles.status());
    const std::string out = json ? tally::tools::FormatProfilesJson(*profiles)
                                 : tally::tools::FormatProfilesText(*profiles);
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  auto report = tally::ipc::QueryStatus(server);
  if (!report.ok()) return Fail(server, report.status());
  const std::string out = command == "metrics" ? tally::tools::FormatMetrics({{server, *report}})
                          : json ? tally::tools::FormatStatusJson(*report, server)
                                 : tally::tools::FormatStatusText(*report, server);
  std::fputs(out.c_str(), stdout);
  return 0;
}
