// tally-ctl: inspects and steers a running tally-server over its socket, with control requests
// that never count as a client: `status` (device, backend, clients and what the scheduler did
// for each), `priority CLIENT LEVEL` (a client's priority, while it runs), `limit CLIENT SIZE`
// (a client's device-memory limit, while it runs), `budget CLIENT PCT[@pN]` (a client's slowdown
// budget, while it runs), `profiles` (what the profiler knows) and
// `metrics` (the status for Prometheus), `top` (a live view of the clients and their rates) and
// `drain` (no new clients; the server exits once the last has left) and `cache [clear]` (the
// server's code cache).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/byte_size.h"
#include "common/client_priority.h"
#include "common/slowdown_budget.h"
#include "ipc/control.h"
#include "ipc/socket_path.h"
#include "tools/tally_ctl/command_line.h"
#include "tools/tally_ctl/grant_command.h"
#include "tools/tally_ctl/metrics_format.h"
#include "tools/tally_ctl/profiles_format.h"
#include "tools/tally_ctl/status_format.h"
#include "tools/tally_ctl/top_format.h"

namespace {

constexpr char kUsage[] =
    "Usage: tally-ctl status [--json] [--server PATH | --all]\n"
    "       tally-ctl priority CLIENT LEVEL [--server PATH]\n"
    "       tally-ctl limit CLIENT SIZE|none [--server PATH]\n"
    "       tally-ctl budget CLIENT PCT[@pN] [--server PATH]\n"
    "       tally-ctl profiles [--json] [--server PATH]\n"
    "       tally-ctl metrics [--server PATH]\n"
    "       tally-ctl top [--batch] [-n N] [--interval SECONDS] [--sort KEY] [--server PATH]\n"
    "       tally-ctl drain [--server PATH]\n"
    "       tally-ctl cache [clear] [--json] [--server PATH]\n"
    "       tally-ctl grant --priority LEVEL --memory-limit SIZE [--pinned-limit SIZE]\n"
    "                       [--name NAME] [--json] [--server PATH]\n"
    "       tally-ctl revoke NAME [--clients keep|end] [--server PATH]\n"
    "Inspects and steers a running tally-server.\n\n"
    "  status         its device (name, total and free memory, ordinal, UUID), whether it\n"
    "                 accepts clients (draining, --max-clients) and how many wait for memory\n"
    "                 (--admission wait), its backend (the emulator or\n"
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
    "  budget CLIENT PCT[@pN]\n"
    "                 sets the slowdown budget of the client with that id (as tally-run\n"
    "                 --slowdown-budget: 10%, 20%@p95; 0% holds the background beside it);\n"
    "                 effective at once, under --policy priority-budget (another policy\n"
    "                 refuses a budget above 0%)\n"
    "  profiles       the launch configurations the profiler knows: kernel, grid, block, shared\n"
    "                 memory, chosen form, original time, normalised speed, turnaround\n"
    "  metrics        the status in Prometheus's text format (every series labelled\n"
    "                 server=PATH): tally_server_up, tally_server_info,\n"
    "                 tally_device_memory[_free]_bytes, tally_clients, tally_client_* per\n"
    "                 connected client (label client=ID; pid, priority and command in\n"
    "                 tally_client_info), and counters tally_kernels_total{form}, tally_*_total\n"
    "                 and tally_library_calls_total{library, ran_in=\"tally\"|\"vendor\"} per\n"
    "                 client, the clients that have\n"
    "                 left summed under client=\"departed\"\n"
    "  top            the clients, refreshed every --interval seconds (default 1): id, pid,\n"
    "                 priority, device memory, kernels, preemptions and library calls per\n"
    "                 second, and the share of the time their kernels were held; sorted by\n"
    "                 --sort id|memory|kernels|preemptions|held (default kernels). On a terminal\n"
    "                 it redraws until interrupted or N samples; --batch (or output that is\n"
    "                 not a terminal) prints N samples (default 1) one after another\n"
    "  drain          the server takes no new clients (they are refused, saying why) and\n"
    "                 exits once the clients connected now have left (for upgrades)\n"
    "  cache [clear]  the server's code cache of kernels' transformed forms and of the machine\n"
    "                 code the driver compiled from modules' PTX (tally-server --code-cache):\n"
    "                 its folder, entries, bytes and bound, and its hits, misses, entries\n"
    "                 stored, evicted and found corrupt since the server started, and of the\n"
    "                 machine code: images linked and stored, loaded from the cache, refused\n"
    "                 by the driver (linked again), links failed (loaded as PTX), and links\n"
    "                 queued or running now (--json: an object with dir, entries, bytes,\n"
    "                 limit_bytes, hits, misses, stored, evicted, corrupt, machine_code\n"
    "                 {linked, loaded, refused, link_failed, filling}; null without a cache);\n"
    "                 clear removes every entry first\n"
    "  grant          makes a socket of the server's own for one job (what a batch system or\n"
    "                 a device plugin hands to it), in a directory of its own next to the\n"
    "                 server's socket (SOCKET-without-.sock.grants/NAME/server.sock): its\n"
    "                 clients get priority LEVEL at most (a client that asks for nothing gets\n"
    "                 LEVEL, one that asks for less gets what it asks) and these limits at\n"
    "                 most, whatever their environment or tally-run options say (they are told\n"
    "                 what was lowered); tally-ctl requests on it are refused. NAME (letters,\n"
    "                 digits, -, _, .; default grant-N) must be new; SIZE at most the\n"
    "                 device's memory. Prints where the socket is (--json: an object with\n"
    "                 name, socket, priority, memory_limit_bytes, pinned_limit_bytes,\n"
    "                 clients). Grants last until revoked or the server exits\n"
    "  revoke NAME    removes the grant's socket: no new clients; those connected run on\n"
    "                 under its limits (--clients keep, default) or are ended now (--clients\n"
    "                 end: their next CUDA call fails)\n"
    "  --all          status of every server in the run directory (TALLY_RUN_DIR, else\n"
    "                 $XDG_RUNTIME_DIR/tally, else /tmp/tally-$UID), one per GPU: one section\n"
    "                 each, or with --json an array of status objects; a socket nobody answers\n"
    "                 on is shown as not running ({socket, running: false, error})\n"
    "  Only the server's own user and root may change clients, drain, grant or clear the\n"
    "  cache; other users the server admits (tally-server --access) may ask for status,\n"
    "  profiles, metrics and the cache.\n\n"
    "  --json         print JSON instead of a table. status: an object with the keys socket,\n"
    "                 server_pid, device {name, ordinal, uuid, total_memory_bytes,\n"
    "                 free_memory_bytes, context_faults (faults of the context all clients\n"
    "                 share, recovered from), busy_ns {high: nanoseconds since the server\n"
    "                 started during which work of a client above best-effort was on the\n"
    "                 device}}, max_clients, draining, admission_waiting (clients\n"
    "                 waiting for memory under tally-server --admission wait),\n"
    "                 backend {kind: \"emulator\"|\"nvidia-driver\", description},\n"
    "                 isolation (none|fenced|strict), unfenceable (refuse|alone under\n"
    "                 fenced, else null: tally-server --unfenceable), departed\n"
    "                 {clients, scheduling {...}, library_calls {...}, vendor_library_calls\n"
    "                 {...}: the counters below,\n"
    "                 summed over the clients that have left, without held_ns and the\n"
    "                 preemption latencies; faulted_clients: those that left with a sticky\n"
    "                 error}, modules {registered, kernels_indexed,\n"
    "                 kernels_transformed, forms_loaded, forms_queued, forms_made,\n"
    "                 forms_waited: the server's module registrations, the kernels of the\n"
    "                 images it parsed, those whose transformed forms it made or read from\n"
    "                 the code cache and the forms it loaded; the kernels queued for the\n"
    "                 background worker once the scheduler wanted them shaped and those it\n"
    "                 finished, and\n"
    "                 the launches held until their kernel's forms were made}, code_cache\n"
    "                 (as tally-ctl cache --json) and clients\n"
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
    "                 (a call that launched nothing is not counted), vendor_library_calls\n"
    "                 {cublas, cublaslt, cudnn}: its calls run in the vendor library inside\n"
    "                 the server (tally-server --library-kernels), counted when queued},\n"
    "                 unfenced_refused, unfenced_alone, unfenced_waiting (tally-server\n"
    "                 --unfenceable alone: launches that ran alone, waiting now), fence_violated,\n"
    "                 sticky_error (its CUresult, 0: none),\n"
    "                 grant (its grant's name, or null)}],\n"
    "                 grants [{name, socket, priority, memory_limit_bytes,\n"
    "                 pinned_limit_bytes, clients}];\n"
    "                 profiles: an array of objects, one per launch configuration\n"
    "  --server PATH  the server's socket (default: TALLY_SERVER, else the one server socket\n"
    "                 in the run directory)\n"
    "  --help         show this help\n\n"
    "Exit status: 0 done, 1 no server answered (or it answered with an error, or has no such\n"
    "client, or refused the budget; --all: none answered), 2 usage.\n";

using tally::tools::Fail;
using tally::tools::kAnswerTimeout;
using tally::tools::Usage;

// A change to one client: prints what the server says; 0 when it found the client and took the
// change.
template <typename Reply>
int Answered(const std::string& server, const absl::StatusOr<Reply>& reply) {
  if (!reply.ok()) return Fail(server, reply.status());
  std::printf("%s\n", reply->message);
  return reply->found != 0 ? 0 : 1;
}

struct TopOptions {
  bool batch = false;
  std::optional<long> samples;  // default: 1 in batch mode, until interrupted otherwise
  double interval_seconds = 1;
  tally::tools::TopSort sort = tally::tools::TopSort::kKernels;
};

// Sets one of top's options from its value; an error message, or "" when it is good.
std::string ParseTopOption(std::string_view option, const std::string& value, TopOptions& top) {
  if (option == "--sort") {
    const auto sort = tally::tools::ParseTopSort(value);
    if (!sort) return "--sort wants id, memory, kernels, preemptions or held, not '" + value + "'";
    top.sort = *sort;
    return "";
  }
  char* end = nullptr;
  if (option == "-n") {
    const long samples = std::strtol(value.c_str(), &end, 10);
    if (end == value.c_str() || *end != '\0' || samples < 1) {
      return "-n wants a positive number of samples, not '" + value + "'";
    }
    top.samples = samples;
    return "";
  }
  const double seconds = std::strtod(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || !(seconds >= 0.01 && seconds <= 3600)) {
    return "--interval wants seconds between 0.01 and 3600, not '" + value + "'";
  }
  top.interval_seconds = seconds;
  return "";
}

// status --all: every server socket in the run directory.
int RunStatusAll(bool json) {
  auto run_dir = tally::ipc::RunDirectory(tally::ipc::DirectoryMode::kCheckIfPresent);
  if (!run_dir.ok()) {
    std::fprintf(stderr, "tally-ctl: no run directory: %s\n",
                 std::string(run_dir.status().message()).c_str());
    return 1;
  }
  const auto trust = tally::ipc::ServerTrust::FromEnvironment();
  if (!trust.ok()) return Fail(*run_dir, trust.status());
  std::vector<tally::tools::SocketStatus> servers;
  bool any_answered = false;
  for (const std::string& socket : tally::ipc::ServerSockets(*run_dir)) {
    servers.push_back({socket, tally::ipc::QueryStatus(socket, kAnswerTimeout, *trust)});
    any_answered |= servers.back().report.ok();
  }
  if (servers.empty()) {
    std::fprintf(stderr, "tally-ctl: no tally-server socket in %s\n", run_dir->c_str());
    return 1;
  }
  const std::string out = json ? tally::tools::FormatAllStatusJson(servers)
                               : tally::tools::FormatAllStatusText(servers);
  std::fputs(out.c_str(), stdout);
  return any_answered ? 0 : 1;
}

// Samples the server's status every interval and prints each sample's rates.
int RunTop(const std::string& server, const tally::ipc::ServerTrust& trust, const TopOptions& top) {
  const bool batch = top.batch || isatty(STDOUT_FILENO) == 0;
  const long samples = top.samples.value_or(batch ? 1 : std::numeric_limits<long>::max());
  auto before = tally::ipc::QueryStatus(server, kAnswerTimeout, trust);
  if (!before.ok()) return Fail(server, before.status());
  auto taken = std::chrono::steady_clock::now();
  for (long sample = 0; sample < samples; ++sample) {
    std::this_thread::sleep_for(std::chrono::duration<double>(top.interval_seconds));
    auto now = tally::ipc::QueryStatus(server, kAnswerTimeout, trust);
    if (!now.ok()) return Fail(server, now.status());
    const auto at = std::chrono::steady_clock::now();
    const std::string text = tally::tools::FormatTop(
        *before, *now, std::chrono::duration<double>(at - taken).count(), top.sort);
    // A terminal is cleared and redrawn; a batch gets samples one after another.
    std::fputs(batch ? (sample > 0 ? "\n" : "") : "\x1b[H\x1b[2J", stdout);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    before = std::move(now);
    taken = at;
  }
  return 0;
}

// tally-ctl cache [clear]: the server's code cache, cleared first with `clear`.
int RunCache(const std::string& server, const tally::ipc::ServerTrust& trust, bool clear,
             bool json) {
  auto reply = tally::ipc::QueryCodeCache(server, clear, kAnswerTimeout, trust);
  if (!reply.ok()) return Fail(server, reply.status());
  if (reply->message[0] != '\0') std::fprintf(json ? stderr : stdout, "%s\n", reply->message);
  const std::string out = json ? tally::tools::FormatCodeCacheJson(reply->cache) + "\n"
                               : tally::tools::FormatCodeCacheText(reply->cache);
  std::fputs(out.c_str(), stdout);
  return reply->ok != 0 ? 0 : 1;
}

// The command word when it is grant or revoke, whose options are their own: the first argument
// that is neither an option nor --server's value.
std::optional<std::string> GrantCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--server") {
      ++i;
    } else if (!arg.starts_with("-")) {
      if (arg == "grant" || arg == "revoke") return std::string(arg);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  if (const std::optional<std::string> command = GrantCommand(argc, argv)) {
    std::vector<std::string> args{*command};
    bool skipped = false;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
      if (!skipped && argv[i] == *command) {
        skipped = true;
      } else {
        args.emplace_back(argv[i]);
      }
    }
    return tally::tools::RunGrantCommand(args);
  }
  bool json = false;
  bool all = false;
  TopOptions top;
  bool top_option = false;  // one of top's options was given
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
    } else if (arg == "--all") {
      all = true;
    } else if (arg == "--batch") {
      top.batch = top_option = true;
    } else if ((arg == "-n" || arg == "--interval" || arg == "--sort") && i + 1 < argc) {
      top_option = true;
      if (const std::string error = ParseTopOption(arg, argv[++i], top); !error.empty()) {
        return Usage(error);
      }
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
    return Usage(
        "no command given; the commands are status, priority, limit, budget, profiles, metrics, "
        "top, drain, cache");
  }
  const std::string& command = words[0];
  const bool targets_client = command == "priority" || command == "limit" || command == "budget";
  const bool clear_cache = command == "cache" && words.size() == 2 && words[1] == "clear";
  const size_t operands = targets_client ? 2 : clear_cache ? 1 : 0;
  if (command != "status" && !targets_client && command != "profiles" && command != "metrics" &&
      command != "top" && command != "drain" && command != "cache") {
    return Usage("unknown command '" + command + "'");
  }
  if (words.size() != operands + 1) {
    return Usage(command == "priority" ? "priority wants CLIENT and LEVEL"
                 : command == "limit"  ? "limit wants CLIENT and SIZE (or none)"
                 : command == "budget" ? "budget wants CLIENT and PCT[@pN]"
                                       : "unexpected argument '" + words.back() + "'");
  }
  if (json && (targets_client || command == "metrics" || command == "top" || command == "drain")) {
    return Usage(command + " has no --json");
  }
  if (top_option && command != "top") return Usage("--batch, -n, --interval and --sort are top's");
  if (all && (command != "status" || !server.empty())) {
    return Usage("--all is status's, without --server");
  }
  if (all) return RunStatusAll(json);
  tally::ClientId client_id;
  tally::ClientPriority level = tally::ClientPriority::Unset();
  uint64_t memory_limit = tally::ipc::kNoLimit;
  tally::SlowdownBudget budget;
  if (targets_client) {
    const std::string& id = words[1];
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos ||
        id.size() > 19) {
      return Usage("CLIENT is a client id as status shows it, not '" + id + "'");
    }
    client_id = tally::ClientId(std::stoull(id));
  }
  if (command == "limit" && words[2] != "none") {
    auto bytes = tally::ParseByteSize(words[2]);
    if (!bytes.ok()) return Usage("SIZE: " + std::string(bytes.status().message()));
    memory_limit = *bytes;
  }
  if (command == "budget") {
    auto parsed = tally::SlowdownBudget::Parse(words[2]);
    if (!parsed.ok()) return Usage("PCT[@pN]: " + std::string(parsed.status().message()));
    budget = *parsed;
  }
  if (command == "priority") {
    auto parsed = tally::ClientPriority::Parse(words[2]);
    if (!parsed.ok() || words[2].empty()) {
      return Usage("LEVEL: " + (parsed.ok() ? std::string("empty")
                                            : std::string(parsed.status().message())));
    }
    level = *parsed;
  }
  const std::optional<tally::tools::Target> target = tally::tools::ResolveTarget(server);
  if (!target) return 1;
  server = target->server;
  const tally::ipc::ServerTrust& trust = target->trust;
  if (command == "priority") {
    return Answered(server, tally::ipc::SetClientPriority(server, client_id, level.level(),
                                                          kAnswerTimeout, trust));
  }
  if (command == "limit") {
    return Answered(server, tally::ipc::SetClientMemoryLimit(server, client_id, memory_limit,
                                                             kAnswerTimeout, trust));
  }
  if (command == "budget") {
    return Answered(server,
                    tally::ipc::SetClientBudget(server, client_id, budget, kAnswerTimeout, trust));
  }
  if (command == "profiles") {
    auto profiles = tally::ipc::QueryProfiles(server, kAnswerTimeout, trust);
    if (!profiles.ok()) return Fail(server, profiles.status());
    const std::string out = json ? tally::tools::FormatProfilesJson(*profiles)
                                 : tally::tools::FormatProfilesText(*profiles);
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  if (command == "top") return RunTop(server, trust, top);
  if (command == "cache") return RunCache(server, trust, clear_cache, json);
  if (command == "drain") {
    auto reply = tally::ipc::DrainServer(server, kAnswerTimeout, trust);
    if (!reply.ok()) return Fail(server, reply.status());
    std::printf("%s\n", reply->message);
    return 0;
  }
  auto report = tally::ipc::QueryStatus(server, kAnswerTimeout, trust);
  if (!report.ok()) return Fail(server, report.status());
  const std::string out = command == "metrics" ? tally::tools::FormatMetrics({{server, *report}})
                          : json ? tally::tools::FormatStatusJson(*report, server)
                                 : tally::tools::FormatStatusText(*report, server);
  std::fputs(out.c_str(), stdout);
  return 0;
}
