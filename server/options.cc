// Flag parsing from one table, so that --help, the environment fallbacks and the parser can
// never disagree.
#include "server/options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/byte_size.h"
#include "common/config_file.h"
#include "common/status.h"
#include "ipc/peer_access.h"
#include "scheduler/policy.h"

namespace tally::server {
namespace {

struct Flag {
  const char* name;  // --name
  const char* env;
  const char* value_name;  // nullptr for a boolean flag
  const char* help;
};

constexpr Flag kFlags[] = {
    {"emulate", "TALLY_EMULATE", nullptr,
     "use the emulated GPU (libtally_emu.so) even when an NVIDIA GPU is present"},
    {"device", "TALLY_DEVICE", "INDEX|UUID",
     "the device to serve: its ordinal, or its UUID as nvidia-smi -L prints it "
     "(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, GPU- optional; default 0)"},
    {"run-dir", "TALLY_RUN_DIR", "DIR",
     "the directory of the servers' sockets, one per device, named by its UUID "
     "(GPU-<uuid>.sock), where clients, tally-run --device and tally-ctl status --all look "
     "(default $XDG_RUNTIME_DIR/tally, else /tmp/tally-$UID, which must be ours and private; "
     "created with mode 0700 when missing; a DIR given must be ours and writable by us alone, "
     "e.g. the service's /run/tally, mode 0750 for group tally)"},
    {"socket", "TALLY_SERVER", "PATH",
     "Unix socket to listen on, instead of the one named by the device's UUID in --run-dir"},
    {"emulator-library", "TALLY_EMU_LIBRARY", "PATH", "libtally_emu.so to load when emulating"},
    {"validate", "TALLY_VALIDATE", "FORM",
     "run every transformable kernel in one form, to check that programs compute the same "
     "under Tally's transformations: slice:N (N consecutive slices, fewer for smaller grids), "
     "ptb:W (persistent thread blocks, at most W workers and no more than fit), preempt[:W] "
     "(PTB stopped at random moments, up to 3 times per launch, and resumed); launches stay "
     "asynchronous and in stream order. Kernels that cannot be transformed (the log says why) "
     "and cooperative launches run unchanged; the log says how each client's launches ran. "
     "Replaces --policy"},
    {"policy", "TALLY_POLICY", "NAME", "the scheduling policy (default priority; see below)"},
    {"slowdown-budget", "TALLY_DEFAULT_SLOWDOWN_BUDGET", "PCT[@pN]",
     "with --policy priority-budget, the slowdown budget of foreground clients that give none "
     "(tally-run --slowdown-budget): how much longer than alone their busy periods (from work "
     "arriving to the queue going idle: a request) may take at the percentile (p99 unless "
     "given) while background work runs beside them, e.g. 10% or "
     "20%@p95 (default 0%: the background is held as by --policy priority; above 0% "
     "refused under another policy or with --validate, which have no budgets; a client's own "
     "budget there has no effect, which it and the log are told at connect). A budget counts "
     "only while its client is in the foreground (the most important connected clients)"},
    {"min-idle-ms", "TALLY_MIN_IDLE_MS", "MS",
     "a lower priority level's kernels wait until every higher level has been idle this long "
     "(default 0.1; on the emulated GPU 2)"},
    {"long-idle-ms", "TALLY_LONG_IDLE_MS", "MS",
     "a background kernel that cannot be made preemptible and is not known to be short waits "
     "for this much idleness above it (default 100; on the emulated GPU 2000)"},
    {"shape-alone", "TALLY_SHAPE_ALONE", nullptr,
     "run the kernels of clients below high in their transformed (preemptible) forms even while "
     "no more important client is connected, so that a latency-critical client that connects "
     "later finds them preemptible at once; costs those clients the transformed forms' speed "
     "while they are alone (default off: a client with no more important one connected runs its "
     "kernels in their original forms, and shaping starts when a more important client "
     "connects, after the kernels already on the device)"},
    {"turnaround-ms", "TALLY_TURNAROUND_MS", "MS",
     "the profiler's bound on how long a background kernel may keep the device once asked to "
     "give it back (default 0.1; on the emulated GPU, which runs kernels hundreds of times "
     "slower than a GPU, 1)"},
    {"max-client-priority", "TALLY_MAX_CLIENT_PRIORITY", "N",
     "clients that ask for a higher priority level get N (high is 1, best-effort 0); "
     "tally-ctl priority is not capped"},
    {"teardown-timeout-ms", "TALLY_TEARDOWN_TIMEOUT_MS", "MS",
     "how long the work of a client that left may still run on the device before its memory, "
     "page-locked blocks and modules are abandoned (left allocated until the server restarts, "
     "with a log line) instead of the server waiting for a kernel that may never end (default "
     "10000)"},
    {"handshake-timeout-ms", "TALLY_HANDSHAKE_TIMEOUT_MS", "MS",
     "how long a connecting peer may take to complete its handshake before it is refused; "
     "handshakes run beside each other, so a silent peer holds no one else up (default 5000)"},
    {"max-clients", "TALLY_MAX_CLIENTS", "N",
     "clients served at once; further ones are refused at connection with a message that says "
     "so (default 64)"},
    {"admission", "TALLY_ADMISSION", "fail|wait",
     "what happens to a client whose tally-run --memory-limit exceeds the device memory that "
     "the connected clients have not allocated or been promised (by their own --memory-limit): "
     "fail (it is admitted, and its allocations fail once the device is full; default) or wait "
     "(it waits its turn, first come first served, saying on its stderr what for, until that "
     "much is free, and is refused after --admission-timeout-ms)"},
    {"admission-timeout-ms", "TALLY_ADMISSION_TIMEOUT_MS", "MS",
     "how long a client may wait to be admitted under --admission wait (default 60000)"},
    {"max-queued-commands", "TALLY_MAX_QUEUED_COMMANDS", "N",
     "stream work (launches, copies, ...) a client may have accepted and not yet issued; while "
     "its queue is full the server reads no more of its requests, so the client blocks as on a "
     "full GPU push buffer (default 1024)"},
    {"max-streams", "TALLY_MAX_STREAMS", "N",
     "streams a client may hold; cudaStreamCreate beyond fails with cudaErrorMemoryAllocation "
     "(default 1024)"},
    {"max-events", "TALLY_MAX_EVENTS", "N",
     "events a client may hold; cudaEventCreate beyond fails with cudaErrorMemoryAllocation "
     "(default 16384)"},
    {"max-modules", "TALLY_MAX_MODULES", "N",
     "modules (registered fatbins, loaded PTX) a client may hold (default 1024)"},
    {"max-module-size", "TALLY_MAX_MODULE_SIZE", "SIZE",
     "the largest module image a client may load, e.g. 256M (default and at most 1G)"},
    {"client-memory-limit", "TALLY_CLIENT_MEMORY_LIMIT", "SIZE",
     "device memory each client may allocate, e.g. 4G or 512M; beyond it allocations fail with "
     "cudaErrorMemoryAllocation, and cudaMemGetInfo and the device's total memory show the "
     "limit as the device's size. tally-ctl limit changes it for one client while it runs; "
     "tally-run --memory-limit can only lower it (default none)"},
    {"client-pinned-limit", "TALLY_CLIENT_PINNED_LIMIT", "SIZE",
     "page-locked host memory each client may register (cudaMallocHost, cudaHostAlloc, "
     "cudaMallocManaged), e.g. 2G (default none; it is also bounded by the client's 8 GiB "
     "host region)"},
    {"config", "TALLY_CONFIG", "FILE",
     "a file of TALLY_*=VALUE lines (the names in brackets here, as systemd's EnvironmentFile= "
     "reads them; # starts a comment): its settings override the environment's, and flags override "
     "both. "
     "On SIGHUP the server reads it again and applies what can change while it runs: "
     "--max-clients, --max-client-priority, --teardown-timeout-ms and the limits per client "
     "(--max-* and --client-*-limit: for clients that connect afterwards), logging each change; "
     "flags given on the command line keep their values"},
    {"library-kernels", "TALLY_LIBRARY_KERNELS", "RULE",
     "whose cuBLAS GEMMs and cuBLASLt matmuls run in NVIDIA's cuBLAS inside the server "
     "(faster, not preemptible) rather than in Tally's own kernels (transformed and preempted "
     "like any kernel): own (nobody's), vendor (everybody's) or by-priority (clients that "
     "connect at level high or above; default). Applies where the vendor library is loaded "
     "(--vendor-libraries); calls captured into graphs and cuDNN's calls always run in Tally's "
     "kernels"},
    {"vendor-libraries", "TALLY_VENDOR_LIBRARIES", "DIR",
     "the folder of the vendor libraries the server loads (libcublas.so.13, libcublasLt.so.13); "
     "default on "
     "NVIDIA's driver: the dynamic loader's search path, on the emulated GPU: none; none: not "
     "loaded. The log says which was loaded, or why none was"},
    {"isolation", "TALLY_ISOLATION", "MODE",
     "how clients are kept out of each other's device memory: none (kernels run as they are; "
     "on NVIDIA's driver any client's kernel can reach any client's memory; default), fenced "
     "(each client's memory lives in an address partition of its own and every kernel runs "
     "fenced into it: an access outside goes to the client's own partition instead and the "
     "client gets cudaErrorIllegalAddress; launches of kernels that cannot be fenced, such as "
     "machine code without PTX: see --unfenceable) or strict (as fenced, and a "
     "module with a kernel that cannot be fenced fails to load). fenced and strict need the "
     "driver's virtual memory management, and run cuBLAS calls in Tally's kernels"},
    {"unfenceable", "TALLY_UNFENCEABLE", "RULE",
     "under --isolation fenced, what a launch of a kernel that cannot be fenced gets: refuse (it "
     "fails with cudaErrorNotSupported, naming the kernel and why; default) or alone (it runs "
     "once no other client holds device memory, page-locked memory or module variables, and "
     "until it has ended no other client gets any: their allocations wait, at most "
     "--unfenceable-wait-ms, then fail with cudaErrorMemoryAllocation; a launch that waited "
     "that long for the others' memory to go fails as under refuse). alone needs --isolation "
     "fenced (strict refuses such code when it is loaded)"},
    {"unfenceable-wait-ms", "TALLY_UNFENCEABLE_WAIT_MS", "MS",
     "--unfenceable alone: how long a launch waits to run alone, and another client's "
     "allocation waits for such a kernel to end (default 10000)"},
    {"access", "TALLY_ACCESS", "WHO",
     "who may connect: user (the server's own user; default), group:NAME (members of the "
     "group, by primary or supplementary group) or any (every local user). The socket's group "
     "and mode follow it (0600, 0660 with the group, 0666), and each peer's credentials are "
     "checked as it connects. Whoever may connect may run jobs and read the status; only the "
     "server's user and root may change clients, drain it or make grants (tally-ctl grant). "
     "Clients of another user connect only to a server they trust: TALLY_SERVER_UID, or the "
     "service user tally"},
    {"profile-cache", "TALLY_PROFILE_CACHE", "PATH",
     "the profiler's cache (default $XDG_CACHE_HOME/tally/profiles-<device>.json, else "
     "~/.cache/tally/profiles-<device>.json, <device> a hash of the device's name, SMs, compute "
     "capability, driver and transformation version; none: no cache)"},
    {"code-cache", "TALLY_CODE_CACHE", "DIR",
     "the folder of the cache of kernels' transformed forms and of the machine code the driver "
     "compiles from modules' PTX (originals and forms), shared by servers and kept across "
     "restarts (default $XDG_CACHE_HOME/tally/code, else ~/.cache/tally/code; none: no cache, "
     "every server transforms every kernel it launches and the driver compiles every module it "
     "loads)"},
    {"code-cache-size", "TALLY_CODE_CACHE_SIZE", "BYTES",
     "the most the code cache's entries may take (e.g. 512M, 4G; default 1G); the least "
     "recently used entries are removed beyond it"},
    {"kept-modules", "TALLY_KEPT_MODULES", "N",
     "modules (of code without module variables) kept loaded, with their transformed forms, "
     "after their last client left, the most recently used (default 16; 0: unloaded at once), "
     "so that the next process of the same program does not load them again"},
    {"forms-threads", "TALLY_FORMS_THREADS", "N",
     "threads that make kernels' transformed forms in the background, at a lower OS priority "
     "than the serving threads (default 1, at most 64). A kernel's forms are made once the "
     "policy would run its client's kernels shaped, never for a client whose kernels run in "
     "their original form (but for modules whose forms share state with them, and every module "
     "under --isolation fenced|strict: their forms are made with the module, when it loads)"},
    {"forms-wait-ms", "TALLY_FORMS_WAIT_MS", "MS",
     "how long a kernel that the policy would run shaped waits for its transformed forms to be "
     "made; after that it is scheduled without them, and the log says so (default 10000)"},
};

void PrintUsage() {
  std::printf(
      "Usage: tally-server [options]\n"
      "Shares one GPU between CUDA applications started with tally-run.\n\n");
  for (const Flag& flag : kFlags) {
    const std::string left = flag.value_name
                                 ? absl::StrFormat("--%s=%s", flag.name, flag.value_name)
                                 : absl::StrFormat("--%s", flag.name);
    std::printf("  %-26s %s [env %s]\n", left.c_str(), flag.help, flag.env);
  }
  std::printf("  %-26s %s\n", "--help", "show this help");
  std::printf("\nPolicies:\n");
  for (const scheduler::PolicyDescription& policy : scheduler::PolicyDescriptions()) {
    const std::string name(policy.name);
    const std::string summary(policy.summary);
    std::printf("  %-26s %s\n", name.c_str(), summary.c_str());
  }
  std::printf("\nClients set their priority with TALLY_PRIORITY (tally-run --priority): high, "
              "best-effort or\nan integer; higher is more important.\n");
  std::printf("\nLogging: TALLY_LOG_LEVEL=error|warn|info|debug.\n");
}

absl::StatusOr<LibraryKernelRule> ParseLibraryKernelRule(std::string_view value) {
  if (value == "own") return LibraryKernelRule::kOwn;
  if (value == "vendor") return LibraryKernelRule::kVendor;
  if (value == "by-priority") return LibraryKernelRule::kByPriority;
  return absl::InvalidArgumentError(
      absl::StrFormat("--library-kernels wants own, vendor or by-priority, not '%s'", value));
}

// A count after "name:" in --validate's value, at least 1.
absl::StatusOr<uint32_t> ParseCount(std::string_view value, std::string_view what) {
  uint32_t count = 0;
  if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &count) || count == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--validate: %s must be a positive integer, not '%s'", what, value));
  }
  return count;
}

// A positive number of milliseconds.
absl::StatusOr<double> ParseMilliseconds(const Flag& flag, std::string_view value) {
  double ms = 0;
  if (!absl::SimpleAtod(absl::string_view(value.data(), value.size()), &ms) || !(ms > 0) ||
      ms > 3.6e6) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--%s wants a positive number of milliseconds (at most an hour), not '%s'", flag.name,
        value));
  }
  return ms;
}

// More kept modules would only hold the device's memory: a program loads a few modules.
constexpr size_t kMaxKeptModules = 4096;
// Transformations are bounded by the cores: more threads than a large machine has gain nothing.
constexpr size_t kMaxFormsThreads = 64;

// A positive count of things.
template <typename T>
absl::StatusOr<T> ParseCountFlag(const Flag& flag, std::string_view value) {
  T count = 0;
  if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &count) || count <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s wants a positive integer, not '%s'", flag.name, value));
  }
  return count;
}

// A size in bytes (512M, 4G, ...).
absl::StatusOr<uint64_t> ParseSizeFlag(const Flag& flag, std::string_view value) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(value);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s: %s", flag.name, bytes.status().message()));
  }
  return bytes;
}

// A boolean flag's value: given bare, "1"; from the environment, 0, 1, true or false.
absl::StatusOr<bool> ParseBoolFlag(const Flag& flag, std::string_view value) {
  if (value != "1" && value != "0" && value != "true" && value != "false") {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s must be 0, 1, true or false, not '%s'", flag.name, value));
  }
  return value == "1" || value == "true";
}

absl::Status Apply(const Flag& flag, std::string_view value, ServerOptions& options) {
  const std::string_view name = flag.name;
  if (name == "emulate") {
    TALLY_ASSIGN_OR_RETURN(options.emulate, ParseBoolFlag(flag, value));
  } else if (name == "shape-alone") {
    TALLY_ASSIGN_OR_RETURN(options.shape_alone, ParseBoolFlag(flag, value));
  } else if (name == "device") {
    absl::StatusOr<DeviceSelector> device = ParseDeviceSelector(value);
    if (!device.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("--device: %s", device.status().message()));
    }
    options.device = device->ordinal.value_or(0);
    options.device_uuid = device->uuid;
  } else if (name == "run-dir") {
    if (value.empty()) return absl::InvalidArgumentError("--run-dir wants a directory");
    options.run_dir = value;
  } else if (name == "socket") {
    options.socket_path = value;
  } else if (name == "emulator-library") {
    options.emulator_library = value;
  } else if (name == "validate") {
    TALLY_ASSIGN_OR_RETURN(options.validate, ParseValidateForm(value));
  } else if (name == "policy") {
    const bool known = std::any_of(
        scheduler::PolicyDescriptions().begin(), scheduler::PolicyDescriptions().end(),
        [&](const scheduler::PolicyDescription& policy) { return policy.name == value; });
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--policy: unknown policy '%s' (see --help)", value));
    }
    options.policy = value;
  } else if (name == "slowdown-budget") {
    absl::StatusOr<SlowdownBudget> budget = SlowdownBudget::Parse(value);
    if (!budget.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--slowdown-budget: %s", budget.status().message()));
    }
    options.slowdown_budget = *budget;
  } else if (name == "min-idle-ms") {
    TALLY_ASSIGN_OR_RETURN(options.min_idle_ms, ParseMilliseconds(flag, value));
  } else if (name == "long-idle-ms") {
    TALLY_ASSIGN_OR_RETURN(options.long_idle_ms, ParseMilliseconds(flag, value));
  } else if (name == "turnaround-ms") {
    TALLY_ASSIGN_OR_RETURN(options.turnaround_ms, ParseMilliseconds(flag, value));
  } else if (name == "max-client-priority") {
    int32_t level = 0;
    if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &level)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--max-client-priority wants an integer priority level, not '%s'", value));
    }
    options.max_client_priority = level;
  } else if (name == "teardown-timeout-ms") {
    TALLY_ASSIGN_OR_RETURN(options.teardown_timeout_ms, ParseMilliseconds(flag, value));
  } else if (name == "handshake-timeout-ms") {
    TALLY_ASSIGN_OR_RETURN(options.handshake_timeout_ms, ParseMilliseconds(flag, value));
  } else if (name == "max-clients") {
    TALLY_ASSIGN_OR_RETURN(options.max_clients, ParseCountFlag<int>(flag, value));
  } else if (name == "admission") {
    if (value != "fail" && value != "wait") {
      return absl::InvalidArgumentError(
          absl::StrFormat("--admission wants fail or wait, not '%s'", value));
    }
    options.admission_wait = value == "wait";
  } else if (name == "admission-timeout-ms") {
    TALLY_ASSIGN_OR_RETURN(options.admission_timeout_ms, ParseMilliseconds(flag, value));
  } else if (name == "max-queued-commands") {
    TALLY_ASSIGN_OR_RETURN(options.limits.max_queued_commands,
                           ParseCountFlag<size_t>(flag, value));
  } else if (name == "max-streams") {
    TALLY_ASSIGN_OR_RETURN(options.limits.max_streams, ParseCountFlag<size_t>(flag, value));
  } else if (name == "max-events") {
    TALLY_ASSIGN_OR_RETURN(options.limits.max_events, ParseCountFlag<size_t>(flag, value));
  } else if (name == "max-modules") {
    TALLY_ASSIGN_OR_RETURN(options.limits.max_modules, ParseCountFlag<size_t>(flag, value));
  } else if (name == "max-module-size") {
    TALLY_ASSIGN_OR_RETURN(const uint64_t bytes, ParseSizeFlag(flag, value));
    if (bytes == 0 || bytes > ipc::kMaxModuleImage) {
      return absl::InvalidArgumentError(
          absl::StrFormat("--max-module-size must be between 1 byte and 1G, not '%s'", value));
    }
    options.limits.max_module_bytes = bytes;
  } else if (name == "client-memory-limit") {
    TALLY_ASSIGN_OR_RETURN(options.limits.memory_limit, ParseSizeFlag(flag, value));
  } else if (name == "client-pinned-limit") {
    TALLY_ASSIGN_OR_RETURN(options.limits.pinned_limit, ParseSizeFlag(flag, value));
  } else if (name == "config") {
    if (value.empty()) return absl::InvalidArgumentError("--config wants a file");
    options.config_path = value;
  } else if (name == "library-kernels") {
    TALLY_ASSIGN_OR_RETURN(options.library_kernels, ParseLibraryKernelRule(value));
  } else if (name == "vendor-libraries") {
    if (value.empty())
      return absl::InvalidArgumentError("--vendor-libraries wants a folder, or none");
    options.vendor_libraries = value;
  } else if (name == "isolation") {
    TALLY_ASSIGN_OR_RETURN(options.isolation, ParseIsolation(value));
  } else if (name == "unfenceable") {
    TALLY_ASSIGN_OR_RETURN(options.unfenceable, ParseUnfenceable(value));
  } else if (name == "unfenceable-wait-ms") {
    TALLY_ASSIGN_OR_RETURN(options.unfenceable_wait_ms, ParseMilliseconds(flag, value));
  } else if (name == "access") {
    TALLY_RETURN_IF_ERROR(ipc::PeerAccess::Parse(value).status());
    options.access = value;
  } else if (name == "profile-cache") {
    if (value.empty()) {
      return absl::InvalidArgumentError("--profile-cache wants a path, or none");
    }
    options.profile_cache = value;
  } else if (name == "code-cache") {
    if (value.empty()) return absl::InvalidArgumentError("--code-cache wants a folder, or none");
    options.code_cache = value;
  } else if (name == "kept-modules") {
    if (!absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &options.kept_modules) ||
        options.kept_modules > kMaxKeptModules) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--kept-modules wants a count from 0 to %d, not '%s'", kMaxKeptModules, value));
    }
  } else if (name == "forms-threads") {
    TALLY_ASSIGN_OR_RETURN(options.forms_threads, ParseCountFlag<size_t>(flag, value));
    if (options.forms_threads > kMaxFormsThreads) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--forms-threads wants a count from 1 to %d, not '%s'", kMaxFormsThreads, value));
    }
  } else if (name == "forms-wait-ms") {
    TALLY_ASSIGN_OR_RETURN(options.forms_wait_ms, ParseMilliseconds(flag, value));
  } else if (name == "code-cache-size") {
    TALLY_ASSIGN_OR_RETURN(options.code_cache_size, ParseSizeFlag(flag, value));
    if (options.code_cache_size == 0) {
      return absl::InvalidArgumentError(
          "--code-cache-size wants a size above 0 (or --code-cache none)");
    }
  }
  return absl::OkStatus();
}

// The flags of the command line in their order, each with its value; nullopt after --help
// (the usage has been printed).
using FlagValues = std::vector<std::pair<const Flag*, std::string>>;
absl::StatusOr<std::optional<FlagValues>> ReadFlags(int argc, char** argv) {
  FlagValues flags;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage();
      return std::nullopt;
    }
    if (!arg.starts_with("--")) {
      return absl::InvalidArgumentError(absl::StrFormat("unexpected argument '%s'", arg));
    }
    arg.remove_prefix(2);
    const size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const Flag* flag = nullptr;
    for (const Flag& candidate : kFlags) {
      if (name == candidate.name) flag = &candidate;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("unknown flag --%s (see --help)", name));
    }
    std::string_view value = "1";
    if (equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (flag->value_name != nullptr) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrFormat("--%s needs a value", name));
      }
      value = argv[++i];
    }
    flags.emplace_back(flag, std::string(value));
  }
  return flags;
}

// The flag whose environment variable is `name`; null for none.
const Flag* FlagOfVariable(std::string_view name) {
  for (const Flag& flag : kFlags) {
    if (name == flag.env) return &flag;
  }
  return nullptr;
}

// The flag called `name`, which the table has.
const Flag& FlagNamed(std::string_view name) {
  const Flag* flag = std::find_if(std::begin(kFlags), std::end(kFlags),
                                  [&](const Flag& candidate) { return name == candidate.name; });
  TALLY_CHECK(flag != std::end(kFlags));
  return *flag;
}

// How each setting's value was given, for errors about it: "--name" (a flag or the default),
// "TALLY_NAME" (the environment) or "FILE:LINE: TALLY_NAME" (the configuration file). Its errors
// then send the operator to where the value is, not to a flag they never passed.
class GivenAs {
 public:
  std::string Of(const Flag& flag) const {
    const auto it = given_.find(flag.name);
    return it != given_.end() ? it->second : absl::StrCat("--", flag.name);
  }

  // Applies `value`, given `as`; an error names it so.
  absl::Status ApplyAs(const Flag& flag, std::string_view value, std::string as,
                       ServerOptions& options) {
    given_[flag.name] = std::move(as);
    return Named(flag, Apply(flag, value, options));
  }

  // `status`, an error about the value of `flag` that Apply worded naming --name first (else
  // the name is put before it), naming the value as it was given. Flags' errors keep their text.
  absl::Status Named(const Flag& flag, const absl::Status& status) const {
    const std::string flag_name = absl::StrCat("--", flag.name);
    const std::string as = Of(flag);
    if (status.ok() || as == flag_name) return status;
    absl::string_view rest = status.message();
    if (absl::ConsumePrefix(&rest, flag_name) &&
        (rest.empty() || rest.front() == ' ' || rest.front() == ':')) {
      return absl::Status(status.code(), absl::StrCat(as, rest));
    }
    return absl::Status(status.code(), absl::StrCat(as, ": ", status.message()));
  }

 private:
  absl::flat_hash_map<std::string_view, std::string> given_;
};

}  // namespace

std::string ServerOptions::WhyNoBudgets() const {
  if (validate) return "--validate replaces the policy with one that has no budgets";
  if (!scheduler::TakesBudgets(policy)) {
    return absl::StrFormat("--policy %s has no budgets (priority-budget has)", policy);
  }
  return "";
}

std::string ServerOptions::IgnoredBudget(const std::optional<SlowdownBudget>& asked) const {
  if (!asked || asked->slowdown <= 0) return "";
  const std::string why = WhyNoBudgets();
  if (why.empty()) return "";
  return absl::StrFormat("slowdown budget %s has no effect: %s", asked->ToString(), why);
}

SchedulingTimes ServerOptions::Times(bool emulated) const {
  const SchedulingTimes defaults = emulated ? kEmulatorDefaults : kGpuDefaults;
  return {min_idle_ms.value_or(defaults.min_idle_ms), long_idle_ms.value_or(defaults.long_idle_ms),
          turnaround_ms.value_or(defaults.turnaround_ms)};
}

absl::StatusOr<ValidateMode> ParseValidateForm(std::string_view value) {
  using scheduler::FormKind;
  const size_t colon = value.find(':');
  const std::string_view kind = value.substr(0, colon);
  const bool has_count = colon != std::string_view::npos;
  const std::string_view count = has_count ? value.substr(colon + 1) : std::string_view();
  ValidateMode mode;
  scheduler::LaunchForm& form = mode.form;
  if (kind == "slice" && has_count) {
    form.kind = FormKind::kSliced;
    TALLY_ASSIGN_OR_RETURN(form.slices, ParseCount(count, "the slice count N of slice:N"));
  } else if (kind == "ptb" && has_count) {
    form.kind = FormKind::kPreemptible;
    TALLY_ASSIGN_OR_RETURN(form.workers, ParseCount(count, "the worker count W of ptb:W"));
  } else if (kind == "preempt") {
    form.kind = FormKind::kPreemptible;
    mode.preempt = true;
    if (has_count) {
      TALLY_ASSIGN_OR_RETURN(form.workers, ParseCount(count, "the worker count W of preempt:W"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("--validate wants slice:N, ptb:W, preempt or preempt:W, not '%s'", value));
  }
  return mode;
}

std::string DescribeValidateMode(const ValidateMode& mode) {
  using scheduler::FormKind;
  const scheduler::LaunchForm& form = mode.form;
  const std::string workers =
      form.workers == 0 ? "as many workers as fit" : absl::StrFormat("%d workers", form.workers);
  switch (form.kind) {
    case FormKind::kOriginal:
      return "in its original form";
    case FormKind::kSliced:
      return absl::StrFormat("sliced into %d pieces", form.slices);
    case FormKind::kPreemptible:
      return absl::StrFormat("as persistent thread blocks (%s)%s", workers,
                             mode.preempt ? ", preempted at random moments and resumed" : "");
  }
  return "in an unknown form";
}

absl::StatusOr<std::optional<ServerOptions>> ParseOptions(
    int argc, char** argv, const std::string& default_emulator_library) {
  ServerOptions options;
  options.emulator_library = default_emulator_library;
  GivenAs given;
  for (const Flag& flag : kFlags) {
    if (const char* value = std::getenv(flag.env); value != nullptr && *value != '\0') {
      TALLY_RETURN_IF_ERROR(given.ApplyAs(flag, value, flag.env, options));
    }
  }
  TALLY_ASSIGN_OR_RETURN(const std::optional<FlagValues> flags, ReadFlags(argc, argv));
  if (!flags) return std::nullopt;  // --help
  const auto apply_flag = [&](const Flag& flag, const std::string& value) {
    return given.ApplyAs(flag, value, absl::StrCat("--", flag.name), options);
  };
  // The configuration file, named by --config or TALLY_CONFIG, between the two.
  for (const auto& [flag, value] : *flags) {
    if (flag->name == std::string_view("config")) TALLY_RETURN_IF_ERROR(apply_flag(*flag, value));
  }
  if (!options.config_path.empty()) {
    TALLY_ASSIGN_OR_RETURN(const std::vector<ConfigEntry> entries,
                           ReadConfigFile(options.config_path));
    for (const ConfigEntry& entry : entries) {
      const std::string where = absl::StrFormat("%s:%d", options.config_path, entry.line);
      const Flag* flag = FlagOfVariable(entry.name);
      if (flag == nullptr || flag->name == std::string_view("config")) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: %s is not a setting of tally-server (see --help)", where, entry.name));
      }
      TALLY_RETURN_IF_ERROR(
          given.ApplyAs(*flag, entry.value, absl::StrCat(where, ": ", entry.name), options));
    }
  }
  for (const auto& [flag, value] : *flags) TALLY_RETURN_IF_ERROR(apply_flag(*flag, value));
  if (options.unfenceable == Unfenceable::kAlone && options.isolation != Isolation::kFenced) {
    const absl::Status refused = absl::InvalidArgumentError(absl::StrFormat(
        "--unfenceable alone needs --isolation fenced, not %s", IsolationName(options.isolation)));
    return given.Named(FlagNamed("unfenceable"), refused);
  }
  if (const std::string why = options.WhyNoBudgets();
      options.slowdown_budget.slowdown > 0 && !why.empty()) {
    const absl::Status refused = absl::InvalidArgumentError(absl::StrFormat(
        "--slowdown-budget %s refused: %s", options.slowdown_budget.ToString(), why));
    return given.Named(FlagNamed("slowdown-budget"), refused);
  }
  return options;
}

}  // namespace tally::server
