// tally-server's command line: flags with --help, each with a TALLY_* environment fallback.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/device_uuid.h"
#include "common/slowdown_budget.h"
#include "scheduler/policy.h"
#include "server/isolation.h"
#include "server/libraries/vendor_libraries.h"
#include "server/session.h"

namespace tally::server {

// --validate: every transformable kernel in one form; PTB kernels optionally preempted at
// random moments and resumed.
struct ValidateMode {
  scheduler::LaunchForm form;
  bool preempt = false;
  friend bool operator==(const ValidateMode&, const ValidateMode&) = default;
};

// The scheduler's time settings. The emulated GPU runs kernels about three orders of magnitude
// slower than a GPU, so its defaults are scaled (--help says so).
struct SchedulingTimes {
  double min_idle_ms;
  double long_idle_ms;
  double turnaround_ms;
};
inline constexpr SchedulingTimes kGpuDefaults{0.1, 100, 0.1};
inline constexpr SchedulingTimes kEmulatorDefaults{2, 2000, 1};

struct ServerOptions {
  bool emulate = false;
  int device = 0;
  std::optional<DeviceUuid> device_uuid;  // --device UUID: replaces `device`
  // Without --socket the server listens on RUN_DIR/GPU-<uuid>.sock; empty: the per-user
  // default (ipc::RunDirectory).
  std::string run_dir;
  std::string socket_path;  // empty: in the run directory, named by the device's UUID
  std::string emulator_library;
  std::optional<ValidateMode> validate;  // replaces the policy
  std::string policy = "priority";
  // priority-budget: the budget of clients that give none.
  SlowdownBudget slowdown_budget;
  // Clients below high run shaped even with no more important client connected.
  bool shape_alone = false;
  // Unset: the backend's default (kGpuDefaults or kEmulatorDefaults).
  std::optional<double> min_idle_ms;
  std::optional<double> long_idle_ms;
  std::optional<double> turnaround_ms;
  // Clients asking for a higher level get this one (the log says so); unset: no cap.
  std::optional<int32_t> max_client_priority;
  // The profiler's cache file; empty: $XDG_CACHE_HOME/tally/profiles-<device>.json (default
  // ~/.cache/tally; server.cc, ProfileCachePath); "none": nothing is read or written.
  std::string profile_cache;
  // The code cache's folder (server/code_cache.h); empty: $XDG_CACHE_HOME/tally/code (default
  // ~/.cache/tally/code; server.cc, CodeCacheDir); "none": no code cache.
  std::string code_cache;
  uint64_t code_cache_size = uint64_t{1} << 30;  // bytes the folder's entries may take
  // Modules of images without module state kept loaded after their last client left, the most
  // recently used first, so that the next process of the same program finds them loaded
  // (ModuleRegistry::KeepModules); 0: unloaded at once.
  size_t kept_modules = 16;
  // Threads of the background worker that makes kernels' transformed forms (FormsWorker).
  size_t forms_threads = 1;
  // How long a kernel whose client the policy shapes waits for its transformed forms before it
  // is scheduled without them (Dispatcher's forms_wait).
  double forms_wait_ms = 10000;
  // How long a leaving client's work may still run before its resources are abandoned (left
  // allocated, with a log line) so that the server never hangs on a kernel that does not end.
  double teardown_timeout_ms = 10000;
  // How long a connecting peer may take to say who it is.
  double handshake_timeout_ms = 5000;
  // Clients served at once; more are refused at the handshake with a message they print.
  int max_clients = 64;
  // --admission wait: a client asking for more memory than is free waits (AdmissionQueue)
  // instead of being admitted to fail its allocations.
  bool admission_wait = false;
  double admission_timeout_ms = 60000;
  // What each client may hold (session.h).
  SessionLimits limits;
  LibraryKernelRule library_kernels = LibraryKernelRule::kByPriority;
  Isolation isolation = Isolation::kNone;
  Unfenceable unfenceable = Unfenceable::kRefuse;  // under Isolation::kFenced
  double unfenceable_wait_ms = 10000;
  // --access: who may connect (ipc::PeerAccess::Parse's text, checked when parsed).
  std::string access = "user";
  // Where the vendor libraries are (libcublas.so.13); empty: the dynamic loader's search path,
  // on NVIDIA's driver only; "none": not loaded.
  std::string vendor_libraries;
  // --config: the file of TALLY_* settings read at the start and again on SIGHUP; empty: none.
  std::string config_path;

  // Why a slowdown budget above 0% has no effect under these options (the policy in effect
  // spends none), naming the setting; empty when budgets are spent. Said wherever one is refused
  // or ignored: at start, by tally-ctl budget, to a client that brings its own.
  std::string WhyNoBudgets() const;
  // What the log and a client that brings a budget above 0% (tally-run --slowdown-budget) are
  // told when it has no effect here; empty when it has, or when the client brings none.
  std::string IgnoredBudget(const std::optional<SlowdownBudget>& asked) const;
  // The times in effect on a backend that is (or is not) emulated.
  SchedulingTimes Times(bool emulated) const;
};

// --validate's value: `slice:N` (N >= 1 pieces), `ptb:W` (W >= 1 workers), `preempt` or
// `preempt:W` (PTB preempted at random moments and resumed; without W as many workers as can
// be resident).
absl::StatusOr<ValidateMode> ParseValidateForm(std::string_view value);
// "sliced into 4 pieces", ... for the log.
std::string DescribeValidateMode(const ValidateMode& mode);

// The options, or nullopt when --help was given (the usage has been printed). Flags override
// the configuration file (--config), which overrides the environment, which overrides the
// defaults; `default_emulator_library` is the build's.
absl::StatusOr<std::optional<ServerOptions>> ParseOptions(
    int argc, char** argv, const std::string& default_emulator_library);

}  // namespace tally::server
