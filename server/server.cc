// The accept loop, the per-client request loop, and shutdown.
#include "server/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <variant>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/device_uuid.h"
#include "common/exception_barrier.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ipc/socket_path.h"
#include "ipc/unique_fd.h"
#include "scheduler/policy.h"
#include "server/call_dispatch.h"
#include "server/cuda_result.h"
#include "server/reload.h"

namespace tally::server {
namespace {

// After a fault of the shared context, how long its clients have to end on their error before
// they are disconnected, so that the context can be reset for the clients that wait.
constexpr auto kFaultGrace = std::chrono::seconds(3);
// How long a new client waits for that reset before it is turned away.
constexpr auto kRecoveryWait = std::chrono::seconds(60);


// The client's response ring, written by its session thread and by its waiter threads.
class ResponseWriter {
 public:
  ResponseWriter(ipc::RingProducer& ring, ipc::WaitOptions wait)
      : ring_(ring), wait_(std::move(wait)) {}
  absl::Status Write(std::span<const std::byte> record) {
    std::lock_guard lock(mutex_);
    return ring_.Write(record, wait_);
  }

 private:
  std::mutex mutex_;
  ipc::RingProducer& ring_;
  const ipc::WaitOptions wait_;
};

// Serves the client's requests in order until it disconnects (or the server stops). Calls that
// wait for the device are answered by the session's waiter threads.
absl::Status ServeRequests(Session& session, ipc::ServerConnection& connection,
                           const ipc::WaitOptions& wait, ResponseWriter& responses,
                           std::atomic<bool>& failed) {
  ipc::RingConsumer& requests = connection.requests();
  while (true) {
    TALLY_ASSIGN_OR_RETURN(std::optional<std::span<const std::byte>> next, requests.TryPeek());
    if (!next) {
      // Nothing more for now: the work gathered from one-way requests goes to the dispatcher in
      // one hand-over before this thread waits.
      session.HandOver();
      TALLY_ASSIGN_OR_RETURN(next, requests.Peek(wait));
    }
    const std::span<const std::byte> record = *next;
    absl::StatusOr<Outcome> outcome = HandleCall(session, record);
    TALLY_RETURN_IF_ERROR(requests.Release());
    if (!outcome.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("malformed message, session closed: %s", outcome.status().message()));
    }
    if (auto* now = std::get_if<std::vector<std::byte>>(&*outcome)) {
      TALLY_RETURN_IF_ERROR(responses.Write(*now));
    } else if (auto* later = std::get_if<LaterResponse>(&*outcome)) {
      // A write that fails means the client is gone, which this loop notices itself. A wait that
      // throws leaves a call unanswered: the session ends (the liveness check sees `failed`).
      session.waiters().Run([&responses, &failed, later = std::move(*later)] {
        const absl::Status answered = CatchExceptions("a wait", [&] {
          responses.Write(later()).IgnoreError();
          return absl::OkStatus();
        });
        if (!answered.ok()) {
          TALLY_LOG_ERROR("{}", answered.ToString());
          failed = true;
        }
      });
    }
  }
}

}  // namespace

absl::StatusOr<ipc::GetDeviceInfoResponse> QueryDeviceInfo(const Backend& backend) {
  const DriverApi& api = backend.api();
  ipc::GetDeviceInfoResponse info{};
  TALLY_RETURN_IF_ERROR(CheckCu(
      api.cuDeviceGetName(info.name, sizeof(info.name) - 1, backend.device()), "cuDeviceGetName"));
  CUuuid uuid{};
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuDeviceGetUuid(&uuid, backend.device()), "cuDeviceGetUuid"));
  std::memcpy(info.uuid, uuid.bytes, sizeof(info.uuid));
  size_t total = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuDeviceTotalMem(&total, backend.device()), "cuDeviceTotalMem"));
  info.total_memory = total;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion"));
  // Needs the context current, as Create makes it.
  int least = 0;
  int greatest = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange"));
  info.stream_priority_least = StreamPriority(least);
  info.stream_priority_greatest = StreamPriority(greatest);
  // Every attribute of cuda.h (the list is generated from it), so that clients answer each one
  // as the device does; one the driver refuses (an older driver) stays unanswered.
#define TALLY_CU_DEVICE_ATTRIBUTE(name, value)                                      \
  static_assert(value < ipc::kDeviceAttributeSlots);                                \
  info.answered[value] =                                                            \
      api.cuDeviceGetAttribute(&info.attributes[value], CU_DEVICE_ATTRIBUTE_##name, \
                               backend.device()) == CUDA_SUCCESS;                   \
  if (!info.answered[value]) info.attributes[value] = 0;
#include "cuda_abi/device_attributes.def"
  return info;
}

namespace {

// The profiler's cache file: the option, else profiles-<device>.json under
// $XDG_CACHE_HOME/tally, else ~/.cache/tally; empty for none. One file per device identity, so
// that servers of different GPUs on one machine do not replace each other's profiles.
std::string ProfileCachePath(const ServerOptions& options,
                             const profiler::DeviceIdentity& device) {
  if (options.profile_cache == "none") return {};
  if (!options.profile_cache.empty()) return options.profile_cache;
  const std::string identity = absl::StrFormat("%s|%d|%d|%d|%d", device.name, device.sm_count,
                                               device.compute_capability, device.driver_version,
                                               device.transform_version);
  const std::string file = absl::StrFormat(
      "/tally/profiles-%016x.json", ipc::ContentHash(std::as_bytes(std::span(identity))));
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache == '/') {
    return cache + file;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache" + file;
  }
  return {};
}

// The code cache's folder: the option, else code under $XDG_CACHE_HOME/tally, else
// ~/.cache/tally; empty for none. Its keys name the device, so servers of different GPUs share it.
std::string CodeCacheDir(const ServerOptions& options) {
  if (options.code_cache == "none") return {};
  if (!options.code_cache.empty()) return options.code_cache;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache == '/') {
    return std::string(cache) + "/tally/code";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/tally/code";
  }
  return {};
}

// Null for none. A folder that cannot be used is an error when it was asked for, and a server
// without the cache (the log says why) when it was the default.
absl::StatusOr<std::shared_ptr<CodeCache>> OpenCodeCache(const ServerOptions& options) {
  const std::string dir = CodeCacheDir(options);
  if (dir.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<CodeCache>> cache = CodeCache::Open(dir, options.code_cache_size);
  if (cache.ok()) {
    TALLY_LOG_INFO("tally-server: code cache {} (at most {} bytes)", dir, options.code_cache_size);
    return std::shared_ptr<CodeCache>(*std::move(cache));
  }
  if (!options.code_cache.empty()) return cache.status();
  TALLY_LOG_WARN("tally-server: no code cache: {}", cache.status().ToString());
  return nullptr;
}

absl::StatusOr<profiler::DeviceIdentity> IdentifyDevice(const Backend& backend,
                                                        const ipc::GetDeviceInfoResponse& info,
                                                        Isolation isolation) {
  const DriverApi& api = backend.api();
  int sms = 0, major = 0, minor = 0;
  for (auto [value, attribute] : {std::pair{&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
                                  {&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
                                  {&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR}}) {
    TALLY_RETURN_IF_ERROR(
        CheckCu(api.cuDeviceGetAttribute(value, attribute, backend.device()), "cuDeviceGetAttribute"));
  }
  return profiler::DeviceIdentity{info.name, static_cast<uint32_t>(sms),
                                  static_cast<uint32_t>(major * 10 + minor), info.driver_version,
                                  ptx::FormsVersion(isolation != Isolation::kNone)};
}

DeviceUuid DeviceUuidOf(const ipc::GetDeviceInfoResponse& info) {
  DeviceUuid uuid{};
  std::memcpy(uuid.data(), info.uuid, uuid.size());
  return uuid;
}

// --socket, else the device's socket in the run directory (made if missing).
absl::StatusOr<std::string> SocketPath(const ServerOptions& options,
                                       const ipc::GetDeviceInfoResponse& info) {
  if (!options.socket_path.empty()) return options.socket_path;
  std::string run_dir = options.run_dir;
  if (run_dir.empty()) {
    TALLY_ASSIGN_OR_RETURN(run_dir, ipc::RuntimeDirectory(ipc::DirectoryMode::kCreate));
  } else {
    TALLY_RETURN_IF_ERROR(ipc::EnsureRunDirectory(run_dir, ipc::DirectoryMode::kCreate));
  }
  return ipc::DeviceSocketPath(run_dir, FormatDeviceUuid(DeviceUuidOf(info)));
}

// --isolation fenced|strict places each client's memory with the driver's virtual memory
// management and passes host addresses of its page-locked memory to fenced kernels.
absl::Status CheckIsolationSupport(const Backend& backend) {
  for (auto [attribute, what] :
       {std::pair{CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                  "virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap)"},
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "unified addressing"}}) {
    int supported = 0;
    TALLY_RETURN_IF_ERROR(
        CheckCu(backend.api().cuDeviceGetAttribute(&supported, attribute, backend.device()),
                "cuDeviceGetAttribute"));
    if (supported == 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "--isolation fenced and strict need the device's %s, which it does not have", what));
    }
  }
  return absl::OkStatus();
}

// Other users reach the socket only through directories they may search: a server for a group
// or for everybody whose socket lies in a private directory serves its own user alone.
void WarnIfUnreachable(const ipc::PeerAccess& access, const std::string& socket) {
  if (access.kind() == ipc::PeerAccess::Kind::kUser) return;
  const std::string directory = socket.substr(0, socket.rfind('/') + 1);
  struct stat st {};
  if (directory.empty() || stat(directory.c_str(), &st) != 0) return;
  const mode_t search = access.kind() == ipc::PeerAccess::Kind::kAny ? S_IXOTH : S_IXGRP | S_IXOTH;
  if ((st.st_mode & search) == 0) {
    TALLY_LOG_WARN(
        "tally-server: it serves {} (--access), but the socket's directory {} (mode {:04o}) "
        "lets no other user reach the socket; serve from a shared directory (--socket, e.g. "
        "under /run/tally)",
        access.Describe(), directory, st.st_mode & 07777);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options,
                                                       Reread reread) {
  TALLY_ASSIGN_OR_RETURN(
      Backend backend,
      Backend::Load({options.emulate, options.device, options.emulator_library,
                     std::getenv(kNoEmulatorTenantsEnv) == nullptr, options.device_uuid}));
  TALLY_LOG_INFO("tally-server: device backend is the {}", backend.description());
  TALLY_RETURN_IF_ERROR(backend.MakeCurrent());
  TALLY_ASSIGN_OR_RETURN(const ipc::GetDeviceInfoResponse info, QueryDeviceInfo(backend));
  ipc::ListenerOptions listen;
  TALLY_ASSIGN_OR_RETURN(listen.path, SocketPath(options, info));
  listen.schema_version = ipc::kCudaCallsSchemaVersion;
  listen.handshake_timeout = absl::Milliseconds(options.handshake_timeout_ms);
  TALLY_ASSIGN_OR_RETURN(listen.access, ipc::PeerAccess::Parse(options.access));
  listen.next_client_id = std::make_shared<std::atomic<uint64_t>>(1);
  listen.notice = [options](const ipc::ClientInfo& client) {
    return options.IgnoredBudget(client.slowdown_budget);
  };
  auto grants = std::make_unique<Grants>(listen, Grants::DirectoryFor(listen.path));
  TALLY_ASSIGN_OR_RETURN(ipc::Listener listener, ipc::Listener::Listen(std::move(listen)));
  TALLY_LOG_INFO("tally-server: serving '{}' (device {}, {}) on {} for {}", info.name,
                 backend.ordinal(), FormatDeviceUuid(DeviceUuidOf(info)), listener.path(),
                 grants->access().Describe());
  WarnIfUnreachable(grants->access(), listener.path());

  const SchedulingTimes times = options.Times(backend.emulated());
  profiler::ProfilerOptions profiling;
  profiling.turnaround_threshold = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(times.turnaround_ms));
  TALLY_ASSIGN_OR_RETURN(profiling.device, IdentifyDevice(backend, info, options.isolation));
  profiling.cache_path = ProfileCachePath(options, profiling.device);
  std::unique_ptr<profiler::Profiler> profiler = profiler::Profiler::Create(std::move(profiling));
  std::unique_ptr<scheduler::Policy> policy;
  if (options.validate) {
    TALLY_LOG_INFO("tally-server: validation mode: every transformable kernel runs {}",
                   DescribeValidateMode(*options.validate));
    policy = scheduler::MakeValidationPolicy(options.validate->form, options.validate->preempt);
  } else {
    scheduler::PolicyConfig config;
    config.priority.min_idle = std::chrono::duration_cast<scheduler::Duration>(
        std::chrono::duration<double, std::milli>(times.min_idle_ms));
    config.priority.long_idle = std::chrono::duration_cast<scheduler::Duration>(
        std::chrono::duration<double, std::milli>(times.long_idle_ms));
    if (options.shape_alone) config.priority.always_shape_below = ClientPriority::kHighLevel;
    config.budget = options.slowdown_budget;
    config.advisor = profiler.get();
    TALLY_ASSIGN_OR_RETURN(policy, scheduler::MakePolicy(options.policy, config));
    TALLY_LOG_INFO(
        "tally-server: policy {} (min idle {} ms, long idle {} ms, turnaround {} ms{}{})",
        options.policy, times.min_idle_ms, times.long_idle_ms, times.turnaround_ms,
        options.shape_alone ? ", clients below high shaped even alone" : "",
        backend.emulated() ? ", the emulated GPU's scaled defaults" : "");
  }
  // The profiler only where a policy shapes kernels: elsewhere its timing would be wasted.
  if (!policy->UsesTransformedForms() || options.validate) profiler.reset();
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<CodeCache> code_cache, OpenCodeCache(options));
  std::unique_ptr<Server> server(new Server(
      std::move(backend), info, std::move(listener), std::move(grants), std::move(profiler),
      std::move(code_cache), policy->UsesTransformedForms(), options, std::move(reread)));
  TALLY_RETURN_IF_ERROR(server->Start(std::move(policy), options.limits));
  return server;
}

Server::Server(Backend backend, ipc::GetDeviceInfoResponse device_info, ipc::Listener listener,
               std::unique_ptr<Grants> grants, std::unique_ptr<profiler::Profiler> profiler,
               std::shared_ptr<CodeCache> code_cache, bool build_forms,
               const ServerOptions& options, Reread reread)
    : backend_(std::move(backend)),
      device_info_(device_info),
      profiler_(std::move(profiler)),
      reread_(std::move(reread)),
      settings_(options),
      modules_(backend_, build_forms, options.isolation != Isolation::kNone, std::move(code_cache),
               /*forms_worker=*/nullptr, options.forms_threads),
      listener_(std::move(listener)),
      grants_(std::move(grants)) {
  modules_.KeepModules(options.kept_modules);
  if (options.admission_wait) {
    admission_ = std::make_unique<AdmissionQueue>(absl::Milliseconds(options.admission_timeout_ms),
                                                  stopping_);
    TALLY_LOG_INFO(
        "tally-server: admission wait: clients asking for more memory than is free "
        "wait up to {} ms",
        options.admission_timeout_ms);
  }
}

absl::Status Server::Start(std::unique_ptr<scheduler::Policy> policy,
                           const SessionLimits& limits) {
  const scheduler::Duration max_poll = backend_.emulated() ? std::chrono::milliseconds(1)
                                                           : std::chrono::microseconds(200);
  ContextRecovery recovery;
  if (backend_.FaultsAreShared()) {
    faults_ = std::make_unique<ContextFaults>(kFaultGrace);
    recovery = {faults_.get(), [this] {
                  return modules_.ResetContext([this] { return backend_.ResetContext(); });
                }};
  }
  if (settings_.unfenceable == Unfenceable::kAlone) {
    unfenced_gate_ = std::make_unique<UnfencedGate>(
        std::chrono::milliseconds(static_cast<int64_t>(settings_.unfenceable_wait_ms)));
  }
  const auto forms_wait = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(settings_.forms_wait_ms));
  TALLY_ASSIGN_OR_RETURN(dispatcher_, Dispatcher::Create(
                                          backend_, std::move(policy), profiler_.get(), max_poll,
                                          [this] {
                                            const absl::Status current = backend_.MakeCurrent();
                                            if (!current.ok()) {
                                              TALLY_LOG_ERROR("dispatcher: {}", current.ToString());
                                            }
                                          },
                                          std::move(recovery), unfenced_gate_.get(), forms_wait));
  if (faults_ != nullptr) faults_->set_wake([this] { dispatcher_->Wake(); });
  // A launch held for its transformed forms is announced as soon as they are made.
  modules_.SetFormsDone([this] { dispatcher_->Wake(); });
  // Rounds often enough that a live dispatcher is seen between two watchdog notifications.
  if (notifier_.watchdog()) dispatcher_->KeepRounding(*notifier_.watchdog() / 4);
  const Isolation isolation = settings_.isolation;
  if (isolation != Isolation::kNone) {
    TALLY_RETURN_IF_ERROR(CheckIsolationSupport(backend_));
    // The vendor libraries' kernels are machine code: they cannot be fenced.
    TALLY_LOG_INFO(
        "tally-server: isolation {}: every client's memory in its own address "
        "partition, kernels fenced into it; library calls run in Tally's kernels",
        IsolationName(isolation));
    if (isolation == Isolation::kFenced) {
      TALLY_LOG_INFO("tally-server: kernels that cannot be fenced: {}",
                     unfenced_gate_ != nullptr
                         ? fmt::format("run alone (once no other client holds memory; waits up "
                                       "to {} ms)",
                                       settings_.unfenceable_wait_ms)
                         : std::string("refused"));
    }
  } else {
    vendor_ = LoadVendorLibraries(settings_.vendor_libraries, settings_.library_kernels,
                                  backend_.emulated());
  }
  context_ = std::make_unique<ServerContext>(
      ServerContext{backend_, modules_, *dispatcher_, device_info_, &sessions_, faults_.get(),
                    limits, &vendor_, isolation, unfenced_gate_.get(), settings_.slowdown_budget});
  return absl::OkStatus();
}

Server::~Server() {
  stopping_ = true;
  for (PeerThread& peer : peers_) peer.thread.join();
  modules_.StopForms();  // its wake-up reaches the dispatcher
  if (abandoned_ > 0) {
    // Kernels of abandoned clients may still run: freeing anything the device might use, or
    // releasing the context, could wait for them without end. The process's exit reclaims all.
    TALLY_LOG_WARN("tally-server: {} client(s) were abandoned; device state is left to the exit",
                   abandoned_.load());
    dispatcher_->Stop();
    context_.release();
    dispatcher_.release();
    vendor_.blas.release();
    backend_.KeepContextAtExit();
  }
  dispatcher_.reset();  // before the profiler it reports to
  if (profiler_ != nullptr) {
    if (const absl::Status saved = profiler_->Save(); !saved.ok()) {
      TALLY_LOG_WARN("tally-server: the profiles were not saved: {}", saved.ToString());
    }
  }
}

namespace {

// Peers whose handshake may run at once: each holds a thread for at most the handshake timeout,
// so a flood of silent connections costs a bounded number of threads.
constexpr int kMaxHandshakes = 64;

}  // namespace

absl::Status Server::Serve() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  ipc::UniqueFd signal_fd(signalfd(-1, &signals, SFD_CLOEXEC));
  if (!signal_fd.valid()) {
    return absl::InternalError(absl::StrFormat("signalfd: %s", std::strerror(errno)));
  }
  notifier_.Notify(absl::StrFormat("READY=1\nSTATUS=serving '%s' on %s", device_info_.name,
                                    listener_.path()));
  std::vector<pollfd> fds;
  while (true) {
    // The grants' listeners after the server's and the signals': a grant made or revoked
    // meanwhile is seen at the next round (a tenth of a second at most; connections wait in
    // the socket's backlog until then).
    const std::vector<std::shared_ptr<Grant>> grants = grants_->List();
    fds.assign({{listener_.fd(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}});
    for (const std::shared_ptr<Grant>& grant : grants) {
      fds.push_back({grant->listener.fd(), POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), /*timeout_ms=*/100) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrFormat("poll: %s", std::strerror(errno)));
    }
    JoinFinishedClients();
    SaveProfilesNowAndThen();
    FeedWatchdog();
    if (draining_ && clients_.load() == 0) {
      TALLY_LOG_INFO("tally-server: drained: the last client has left, shutting down");
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      [[maybe_unused]] ssize_t n = read(signal_fd.get(), &info, sizeof(info));
      if (info.ssi_signo == SIGHUP) {
        Reload();
        continue;
      }
      TALLY_LOG_INFO("tally-server: {} received, shutting down", strsignal(info.ssi_signo));
      break;
    }
    if (fds[0].revents & POLLIN) AcceptPeer(nullptr);
    for (size_t i = 0; i < grants.size(); ++i) {
      if (fds[2 + i].revents & POLLIN) AcceptPeer(grants[i]);
    }
  }
  notifier_.Notify("STOPPING=1");
  stopping_ = true;
  for (PeerThread& peer : peers_) peer.thread.join();
  peers_.clear();
  return absl::OkStatus();
}

void Server::AcceptPeer(std::shared_ptr<Grant> grant) {
  ipc::Listener& listener = grant != nullptr ? grant->listener : listener_;
  absl::StatusOr<ipc::PendingPeer> accepted = listener.AcceptPeer();
  if (!accepted.ok()) {
    TALLY_LOG_WARN("tally-server: refused a client: {}", accepted.status().ToString());
    return;
  }
  if (handshakes_.load() >= kMaxHandshakes) {
    TALLY_LOG_WARN(
        "tally-server: closed the connection of pid {}: {} other peers are still in their "
        "handshake",
        accepted->pid, kMaxHandshakes);
    return;
  }
  ++handshakes_;
  auto peer = std::make_shared<ipc::PendingPeer>(*std::move(accepted));
  PeerThread& thread = peers_.emplace_back();
  thread.thread = std::thread([this, &thread, peer, grant = std::move(grant)] {
    Converse(std::move(*peer), grant);
    thread.done = true;
  });
}

void Server::FeedWatchdog() {
  const std::optional<std::chrono::microseconds> interval = notifier_.watchdog();
  if (!interval) return;
  const auto now = std::chrono::steady_clock::now();
  // A dispatcher that has not begun a round for half the interval is hung: no more pings.
  if (now - watchdog_fed_ < *interval / 3 || now - dispatcher_->last_round() > *interval / 2) {
    return;
  }
  notifier_.Notify("WATCHDOG=1");
  watchdog_fed_ = now;
}

void Server::SaveProfilesNowAndThen() {
  constexpr auto kEvery = std::chrono::seconds(5);
  const auto now = std::chrono::steady_clock::now();
  if (profiler_ == nullptr || now - profiles_saved_ < kEvery) return;
  profiles_saved_ = now;
  // Writes only when measurements changed since the last save.
  if (const absl::Status saved = profiler_->Save(); !saved.ok()) {
    TALLY_LOG_WARN("tally-server: the profiles were not saved: {}", saved.ToString());
  }
}

void Server::JoinFinishedClients() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (it->done) {
      it->thread.join();
      it = peers_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::Converse(ipc::PendingPeer peer, const std::shared_ptr<Grant>& grant) {
  const ipc::Listener& listener = grant != nullptr ? grant->listener : listener_;
  const std::string who = absl::StrFormat("pid %d", peer.pid);
  const ClientId peer_id = peer.client_id;  // its name once it turns out to be a client
  absl::StatusOr<std::variant<ipc::ServerConnection, ipc::ControlConnection>> accepted =
      absl::InternalError("no handshake");
  // A client is admitted while fewer than --max-clients are; its place is taken at once, so
  // that handshakes running side by side cannot admit one too many.
  bool admitted = false;
  const ipc::Admission admit = [&](const ipc::ClientInfo& client, const ipc::AdmissionWait& wait) {
    std::string refusal = TakeClientPlace();
    if (!refusal.empty()) return refusal;
    admitted = true;
    return AwaitMemory(client, wait);
  };
  const absl::Status handshake = CatchExceptions(who, [&] {
    accepted = listener.Handshake(std::move(peer), admit);
    return absl::OkStatus();
  });
  --handshakes_;
  const bool is_client = accepted.ok() && std::holds_alternative<ipc::ServerConnection>(*accepted);
  if (admitted && !is_client) --clients_;  // the handshake failed after admission
  // The session settles its promise of memory; one that never began must too.
  const absl::Cleanup settle = [&] { SettlePromise(peer_id); };
  if (!handshake.ok()) accepted = handshake;
  if (!accepted.ok()) {
    TALLY_LOG_WARN("tally-server: refused a client: {}", accepted.status().ToString());
    return;
  }
  if (auto* control = std::get_if<ipc::ControlConnection>(&*accepted)) {
    const absl::Status answered = CatchExceptions(who, [&] {
      TALLY_RETURN_IF_ERROR(backend_.MakeCurrent());  // cuMemGetInfo needs the context
      AnswerControl(*control);
      return absl::OkStatus();
    });
    if (!answered.ok()) TALLY_LOG_ERROR("tally-server: control request: {}", answered.ToString());
    return;
  }
  const absl::Status served = CatchExceptions(who, [&] {
    Serve(std::make_unique<ipc::ServerConnection>(
              std::move(std::get<ipc::ServerConnection>(*accepted))),
          grant.get());
    return absl::OkStatus();
  });
  --clients_;
  if (!served.ok()) TALLY_LOG_ERROR("tally-server: {}", served.ToString());
}

std::string Server::TakeClientPlace() {
  if (draining_) return "it is draining (tally-ctl drain) and takes no new clients";
  const int max_clients = Settings().max_clients;
  int current = clients_.load();
  while (current < max_clients) {
    if (clients_.compare_exchange_weak(current, current + 1)) return {};
  }
  return absl::StrFormat("it serves %d clients, its maximum (tally-server --max-clients)",
                         max_clients);
}

std::string Server::AwaitMemory(const ipc::ClientInfo& client, const ipc::AdmissionWait& wait) {
  if (admission_ == nullptr || client.memory_limit == 0) return {};
  if (client.memory_limit > device_info_.total_memory) {
    return absl::StrFormat("it asks for %s of device memory, more than the device's %s",
                           FormatByteSize(client.memory_limit),
                           FormatByteSize(device_info_.total_memory));
  }
  // A waiter holds a client's place, not one of the handshakes', which stay for peers to come.
  --handshakes_;
  absl::Cleanup handshake_again = [this] { ++handshakes_; };
  const absl::Duration timeout = admission_->timeout();
  std::string refusal = admission_->Await(
      {client.memory_limit, [this] { return UnpromisedMemory(); },
       [&](const std::string& why) {
         TALLY_LOG_INFO("tally-server: client {} (pid {}): {}", client.client_id, client.pid, why);
         wait.tell(why, timeout).IgnoreError();
       },
       wait.gone},
      listener_.path());
  // Promised until its session counts what it holds, so that the next waiter does not count
  // the same memory as free.
  if (refusal.empty()) {
    std::lock_guard lock(promises_mutex_);
    promises_[client.client_id] = client.memory_limit;
  }
  return refusal;
}

void Server::SettlePromise(ClientId client) {
  std::lock_guard lock(promises_mutex_);
  promises_.erase(client);
}

uint64_t Server::UnpromisedMemory() {
  uint64_t promised = 0;
  {
    std::lock_guard lock(promises_mutex_);
    for (const auto& [client, bytes] : promises_) promised += bytes;
  }
  for (const ipc::ClientStatus& client : sessions_.Report()) {
    promised += client.memory_limit == ipc::kNoLimit
                    ? client.memory_bytes
                    : std::max(client.memory_limit, client.memory_bytes);
  }
  const uint64_t total = device_info_.total_memory;
  return total > promised ? total - promised : 0;
}

void Server::AnswerControl(ipc::ControlConnection& control) {
  switch (control.kind()) {
    case ipc::ControlKind::kStatus:
      return AnswerStatus(control);
    case ipc::ControlKind::kSetPriority:
      return AnswerPriority(control);
    case ipc::ControlKind::kProfiles:
      return AnswerProfiles(control);
    case ipc::ControlKind::kSetMemoryLimit:
      return AnswerMemoryLimit(control);
    case ipc::ControlKind::kSetBudget:
      return AnswerBudget(control);
    case ipc::ControlKind::kDrain:
      return AnswerDrain(control);
    case ipc::ControlKind::kGrant:
      return AnswerGrant(control);
    case ipc::ControlKind::kRevoke:
      return AnswerRevoke(control);
    case ipc::ControlKind::kCodeCache:
    case ipc::ControlKind::kClearCodeCache:
      return AnswerCodeCache(control);
  }
}

namespace {

ipc::CodeCacheStatus CodeCacheStatusOf(const ModuleRegistry& modules) {
  ipc::CodeCacheStatus status{};
  const CodeCache* cache = modules.code_cache();
  if (cache == nullptr) return status;
  const CodeCacheUsage usage = cache->Usage();
  const CodeCacheCounters& counters = cache->counters();
  const MachineCodeCounters& machine_code = modules.machine_code().counters();
  status = {.enabled = 1,
            .reserved = 0,
            .entries = usage.entries,
            .bytes = usage.bytes,
            .limit_bytes = cache->limit_bytes(),
            .hits = counters.hits,
            .misses = counters.misses,
            .stored = counters.stored,
            .evicted = counters.evicted,
            .corrupt = counters.corrupt,
            .machine_code = {.linked = machine_code.linked,
                             .loaded = machine_code.found,
                             .refused = machine_code.refused,
                             .link_failed = machine_code.link_failed,
                             .filling = modules.machine_code().filling()},
            .dir = {}};
  ipc::CopyText(cache->dir().string(), status.dir, sizeof(status.dir));
  return status;
}

}  // namespace

void Server::AnswerCodeCache(ipc::ControlConnection& control) {
  CodeCache* cache = modules_.code_cache();
  ipc::CodeCacheReply reply{};
  // Asking about no cache is answered; clearing none is refused.
  reply.ok = control.kind() == ipc::ControlKind::kCodeCache ? 1 : 0;
  std::string message = "the server has no code cache (--code-cache none)";
  if (cache != nullptr && control.kind() == ipc::ControlKind::kClearCodeCache) {
    const absl::Status cleared = cache->Clear();
    reply.ok = cleared.ok() ? 1 : 0;
    message = cleared.ok() ? "cleared" : std::string(cleared.message());
    TALLY_LOG_INFO("tally-ctl (pid {}): code cache {}: {}", control.pid(), cache->dir().string(),
                   message);
  } else if (cache != nullptr) {
    message = "";
  }
  reply.cache = CodeCacheStatusOf(modules_);
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendCodeCache(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerDrain(ipc::ControlConnection& control) {
  draining_ = true;
  ipc::DrainReply reply{};
  reply.clients = static_cast<uint32_t>(std::max(clients_.load(), 0));
  const std::string message = fmt::format(
      "draining: no new clients; the server exits when the last of its {} client(s) has left",
      reply.clients);
  TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendDrain(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

namespace {

void SendGrantReply(ipc::ControlConnection& control, ipc::GrantReply reply,
                    const std::string& message) {
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendGrant(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

std::string DescribeLimit(uint64_t limit) {
  return limit == ipc::kNoLimit ? std::string("none") : FormatByteSize(limit);
}

}  // namespace

void Server::AnswerGrant(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  ipc::ClientCeiling ceiling;
  ceiling.grant.assign(request.grant_name, strnlen(request.grant_name, sizeof(request.grant_name)));
  ceiling.max_priority = ClientPriority::Level(request.client_priority_level);
  ceiling.memory_limit = request.memory_limit;
  ceiling.pinned_limit = request.pinned_limit;
  ipc::GrantReply reply{};
  if (ceiling.memory_limit == 0 || ceiling.memory_limit == ipc::kNoLimit ||
      ceiling.memory_limit > device_info_.total_memory) {
    return SendGrantReply(
        control, reply,
        fmt::format("a grant's memory limit must be above 0 and at most the device's {} ({} "
                    "bytes)",
                    FormatByteSize(device_info_.total_memory), device_info_.total_memory));
  }
  if (ceiling.pinned_limit == 0) {
    return SendGrantReply(control, reply, "a grant's page-locked memory limit must be above 0");
  }
  absl::StatusOr<std::shared_ptr<Grant>> grant = grants_->Add(std::move(ceiling));
  if (!grant.ok()) return SendGrantReply(control, reply, std::string(grant.status().message()));
  reply.ok = 1;
  reply.grant = (*grant)->Status();
  const std::string message = fmt::format(
      "granted '{}' on {}: priority at most {}, device memory at most {}, page-locked memory at "
      "most {}",
      (*grant)->ceiling.grant, (*grant)->listener.path(), (*grant)->ceiling.max_priority.ToString(),
      DescribeLimit((*grant)->ceiling.memory_limit), DescribeLimit((*grant)->ceiling.pinned_limit));
  TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  SendGrantReply(control, reply, message);
}

void Server::AnswerRevoke(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  const std::string name(request.grant_name,
                         strnlen(request.grant_name, sizeof(request.grant_name)));
  const bool end_clients = request.end_clients != 0;
  ipc::GrantReply reply{};
  absl::StatusOr<std::shared_ptr<Grant>> grant = grants_->Revoke(name, end_clients);
  if (!grant.ok()) return SendGrantReply(control, reply, std::string(grant.status().message()));
  reply.ok = 1;
  reply.grant = (*grant)->Status();
  reply.clients = reply.grant.clients;
  const std::string message =
      fmt::format("revoked '{}': its socket is gone; its {} client(s) {}", name, reply.clients,
                  end_clients ? "are ended" : "run on under its limits");
  TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  SendGrantReply(control, reply, message);
}

ServerOptions Server::Settings() const {
  std::lock_guard lock(settings_mutex_);
  return settings_;
}

void Server::Reload() {
  if (!reread_ || Settings().config_path.empty()) {
    TALLY_LOG_WARN("tally-server: SIGHUP: nothing to reload (no --config file)");
    return;
  }
  absl::StatusOr<ServerOptions> read = reread_();
  if (!read.ok()) {
    TALLY_LOG_WARN("tally-server: SIGHUP: settings kept: {}", std::string(read.status().message()));
    return;
  }
  std::lock_guard lock(settings_mutex_);
  const OptionChanges changes = CompareOptions(settings_, *read);
  for (const std::string& change : changes.need_restart) {
    TALLY_LOG_WARN("tally-server: SIGHUP: {} takes effect only at a restart", change);
  }
  settings_.max_client_priority = read->max_client_priority;
  settings_.teardown_timeout_ms = read->teardown_timeout_ms;
  settings_.max_clients = read->max_clients;
  settings_.limits = read->limits;
  TALLY_LOG_INFO("tally-server: SIGHUP: reloaded {}: {}", settings_.config_path,
                 changes.applied.empty() ? std::string("nothing to change")
                                         : absl::StrJoin(changes.applied, ", "));
}

void Server::AnswerStatus(ipc::ControlConnection& control) {
  ipc::StatusReply reply{};
  reply.server_pid = getpid();
  reply.backend = static_cast<uint32_t>(backend_.emulated() ? ipc::Backend::kEmulator
                                                            : ipc::Backend::kNvidiaDriver);
  reply.isolation = context_->isolation;
  reply.unfenceable =
      context_->unfenced_gate != nullptr ? Unfenceable::kAlone : Unfenceable::kRefuse;
  reply.total_memory = device_info_.total_memory;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (backend_.api().cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS) {
    reply.free_memory = free_bytes;
  }
  ipc::CopyText(device_info_.name, reply.device_name, sizeof(reply.device_name));
  reply.device_ordinal = backend_.ordinal();
  std::memcpy(reply.device_uuid, device_info_.uuid, sizeof(reply.device_uuid));
  reply.max_clients = static_cast<uint32_t>(Settings().max_clients);
  reply.draining = draining_ ? 1 : 0;
  reply.admission_waiting = admission_ != nullptr ? admission_->waiting() : 0;
  ipc::CopyText(backend_.description(), reply.backend_description,
                sizeof(reply.backend_description));
  reply.departed = sessions_.Departed();
  if (faults_ != nullptr) reply.context_faults = faults_->recovered();
  const ModuleCounters& modules = modules_.counters();
  reply.modules = {modules.modules_registered, modules.kernels_indexed, modules.kernels_transformed,
                   modules.forms_loaded,       modules.forms_queued,    modules.forms_made,
                   modules.forms_waited};
  if (dispatcher_ != nullptr) reply.high_busy_ns = dispatcher_->HighBusyNs();
  reply.code_cache = CodeCacheStatusOf(modules_);
  for (const ipc::PriorityClass c : ipc::kPriorityClasses) {
    if (dispatcher_ != nullptr) {
      reply.latencies[static_cast<size_t>(c)] = dispatcher_->latencies(c).Snapshot();
    }
  }
  std::vector<ipc::GrantStatus> grants;
  for (const std::shared_ptr<Grant>& grant : grants_->List()) grants.push_back(grant->Status());
  const absl::Status sent = control.SendStatus(reply, sessions_.Report(), grants);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: status for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerPriority(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  const ClientPriority priority = ClientPriority::Level(request.client_priority_level);
  ipc::PriorityReply reply{};
  reply.client_priority_level = request.client_priority_level;
  reply.found = sessions_.SetPriority(request.client_id, priority) ? 1 : 0;
  const std::string message =
      reply.found != 0 ? absl::StrFormat("client %d now has priority %s", request.client_id.value(),
                                         priority.ToString())
                       : absl::StrFormat("no client %d is connected", request.client_id.value());
  if (reply.found != 0) TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendPriority(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerBudget(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  ipc::BudgetReply reply{};
  const std::optional<SlowdownBudget> asked = request.slowdown_budget.ToBudget();
  const absl::Status valid =
      asked ? asked->Validate() : absl::InvalidArgumentError("the request carries no budget");
  const SlowdownBudget budget = asked.value_or(SlowdownBudget{});
  std::string message;
  if (!valid.ok()) {
    message = absl::StrFormat("budget refused: %s", valid.message());
  } else if (const std::string why = Settings().WhyNoBudgets();
             budget.slowdown > 0 && !why.empty()) {
    // Taken, it would show in the status as if it held.
    message = absl::StrFormat("budget refused: %s", why);
  } else if (!sessions_.SetBudget(request.client_id, budget)) {
    message = absl::StrFormat("no client %d is connected", request.client_id.value());
  } else {
    reply.found = 1;
    reply.slowdown_budget = ipc::WireSlowdownBudget::From(budget);
    message = absl::StrFormat("client %d now has slowdown budget %s", request.client_id.value(),
                              budget.ToString());
    TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  }
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendBudget(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerMemoryLimit(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  ipc::LimitReply reply{};
  reply.memory_limit = request.memory_limit;
  const std::optional<uint64_t> held =
      sessions_.SetMemoryLimit(request.client_id, request.memory_limit);
  reply.found = held ? 1 : 0;
  reply.memory_bytes = held.value_or(0);
  const std::string limit = request.memory_limit == ipc::kNoLimit
                                ? std::string("no device-memory limit")
                                : fmt::format("a device-memory limit of {} bytes ({})",
                                              request.memory_limit,
                                              FormatByteSize(request.memory_limit));
  std::string message =
      held ? fmt::format("client {} now has {}; it holds {} bytes", request.client_id, limit,
                         *held)
           : fmt::format("no client {} is connected", request.client_id);
  if (held && *held > request.memory_limit) {
    message += " (more than the limit: what it holds stays, new allocations fail)";
  }
  if (held) TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendLimit(reply);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: answer for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerProfiles(ipc::ControlConnection& control) {
  std::vector<ipc::ProfileStatus> profiles;
  if (profiler_ != nullptr) {
    for (const profiler::ProfileRecord& record : profiler_->Snapshot()) {
      ipc::ProfileStatus& out = profiles.emplace_back();
      out.kernel = record.shape.kernel;
      const scheduler::KernelShape& shape = record.shape;
      const scheduler::Dim3* dims[] = {&shape.grid, &shape.block};
      uint32_t* fields[] = {out.grid, out.block};
      for (int i = 0; i < 2; ++i) {
        fields[i][0] = dims[i]->x;
        fields[i][1] = dims[i]->y;
        fields[i][2] = dims[i]->z;
      }
      out.shared_bytes = shape.shared_bytes;
      out.form = static_cast<uint32_t>(record.chosen.kind);
      out.slices = record.chosen.slices;
      out.workers = record.chosen.workers;
      out.complete = record.complete ? 1 : 0;
      out.short_turnaround = record.short_turnaround ? 1 : 0;
      out.candidates = record.candidates;
      out.measured = record.measured;
      out.original_ns = record.original_time ? record.original_time->count() : -1;
      out.turnaround_ns = record.turnaround ? record.turnaround->count() : -1;
      out.normalized_speed = record.normalized_speed.value_or(-1);
      ipc::CopyText(record.kernel_name, out.kernel_name, sizeof(out.kernel_name));
    }
  }
  const absl::Status sent = control.SendProfiles(profiles);
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: profiles for pid {} not sent: {}", control.pid(),
                   sent.ToString());
  }
}

void Server::Serve(std::unique_ptr<ipc::ServerConnection> connection, Grant* grant) {
  ipc::ClientInfo client = connection->client();
  TALLY_LOG_INFO("client {} connected: pid {}, priority {}, '{}'{}", client.client_id, client.pid,
                 client.priority.ToString(), client.command,
                 grant != nullptr ? fmt::format(", through grant '{}'", client.grant) : "");
  if (grant != nullptr) ++grant->clients;
  absl::Cleanup left_grant = [grant] {
    if (grant != nullptr) --grant->clients;
  };
  const ServerOptions settings = Settings();
  // Said once, as the client is (ipc::ListenerOptions::notice).
  if (const std::string ignored = settings.IgnoredBudget(client.slowdown_budget);
      !ignored.empty()) {
    TALLY_LOG_WARN("client {}: {}", client.client_id, ignored);
  }
  const std::optional<int32_t> max_priority = settings.max_client_priority;
  if (max_priority && client.priority.level() > *max_priority) {
    client.priority = ClientPriority::Level(*max_priority);
    TALLY_LOG_WARN("client {}: priority capped to {} (--max-client-priority)", client.client_id,
                   client.priority.ToString());
  }
  // Set when a waiter thread failed and left a call unanswered: the session then ends.
  auto failed = std::make_unique<std::atomic<bool>>(false);
  ipc::WaitOptions wait = connection->MakeWaitOptions(absl::InfiniteDuration());
  // The context generation the session belongs to (ContextFaults): a client arriving while the
  // shared context is faulted waits here, its first request unread, until it is reset.
  uint64_t generation = 0;
  if (faults_ != nullptr) {
    std::optional<uint64_t> joined =
        faults_->Join(std::chrono::steady_clock::now() + kRecoveryWait);
    if (!joined) {
      TALLY_LOG_ERROR("client {} turned away: the device context has not been reset after its "
                      "fault within {} s (clients of the faulted context still run)",
                      client.client_id, kRecoveryWait.count());
      return;
    }
    generation = *joined;
  }
  // After the session's end (declared before it, so destroyed after it).
  absl::Cleanup leave = [this, generation] {
    if (faults_ != nullptr) faults_->Leave(generation);
  };
  wait.liveness = [this, generation, grant, &connection = *connection,
                   &failed = *failed]() -> absl::Status {
    if (stopping_) return absl::CancelledError("the server is shutting down");
    if (failed) return absl::InternalError("a wait failed");
    if (grant != nullptr && grant->ended) {
      return absl::CancelledError(absl::StrFormat(
          "its grant '%s' was revoked (tally-ctl revoke --clients end)", grant->ceiling.grant));
    }
    if (faults_ != nullptr && faults_->Evicted(generation, ContextFaults::Clock::now())) {
      return absl::UnavailableError(
          "the device context faulted and the client did not end within the grace period; it "
          "is disconnected so that the context can be reset");
    }
    return connection.CheckPeerAlive();
  };
  // Outlives the session's waiters.
  auto responses = std::make_unique<ResponseWriter>(connection->responses(), wait);
  std::unique_ptr<Session> session;
  // The exception barrier of the session: whatever it throws (std::bad_alloc included) ends this
  // client's session, never the server.
  absl::Status status =
      CatchExceptions(absl::StrFormat("client %d", client.client_id.value()), [&] {
        TALLY_RETURN_IF_ERROR(backend_.MakeCurrent());
        TALLY_ASSIGN_OR_RETURN(
            session, Session::Create(*context_, client, connection->bulk(),
                                     connection->host_region().value_or(std::span<std::byte>{}),
                                     generation, settings.limits));
        SettlePromise(client.client_id);  // the session counts the client's memory now
        session->host_callbacks().Attach(&connection->callbacks(), wait);
        session->set_client_alive([&wait] { return wait.liveness().ok(); });
        return ServeRequests(*session, *connection, wait, *responses, *failed);
      });
  if (absl::IsUnavailable(status) || stopping_) {
    TALLY_LOG_DEBUG("client {} ended: {}", client.client_id, status.ToString());
  } else {
    TALLY_LOG_WARN("client {} ended: {}", client.client_id, status.ToString());
  }
  if (session == nullptr) return;
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double, std::milli>(Settings().teardown_timeout_ms));
  bool closed = false;
  const absl::Status teardown =
      CatchExceptions(absl::StrFormat("client %d teardown", client.client_id.value()), [&] {
        closed = session->Close(deadline);
        return absl::OkStatus();
      });
  if (!teardown.ok()) TALLY_LOG_ERROR("{}", teardown.ToString());
  if (!closed) {
    // Work of the client may still run on the device and its waiter threads may still use the
    // session, the response ring and the segment: all of them are left as they are, for good.
    ++abandoned_;
    session.release();
    responses.release();
    connection.release();
    failed.release();
  }
}

}  // namespace tally::server
