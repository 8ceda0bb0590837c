// The accept loop, the per-client request loop, and shutdown.
#include "server/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <variant>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ipc/socket_path.h"
#include "ipc/unique_fd.h"
#include "scheduler/policy.h"
#include "server/call_dispatch.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

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
                           const ipc::WaitOptions& wait, ResponseWriter& responses) {
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
      // A write that fails means the client is gone, which this loop notices itself.
      session.waiters().Run(
          [&responses, later = std::move(*later)] { responses.Write(later()).IgnoreError(); });
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
  TALLY_RETURN_IF_ERROR(CheckCu(
      api.cuCtxGetStreamPriorityRange(&info.stream_priority_least, &info.stream_priority_greatest),
      "cuCtxGetStreamPriorityRange"));
  // Every attribute of cuda.h (the list is generated from it), so that clients answer each one
  // as the device does; one the driver refuses (an older driver) stays unanswered.
#define TALLY_CU_DEVICE_ATTRIBUTE(name, value)                                      \
  static_assert(value < ipc::kDeviceAttributeSlots);                                \
  info.answered[value] =                                                            \
      api.cuDeviceGetAttribute(&info.attributes[value], CU_DEVICE_ATTRIBUTE_##name, \
                               backend.device()) == CUDA_SUCCESS;                   \
  if (!info.answered[value]) info.attributes[value] = 0;
#include "common/device_attributes.def"
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

absl::StatusOr<profiler::DeviceIdentity> IdentifyDevice(const Backend& backend,
                                                        const ipc::GetDeviceInfoResponse& info) {
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
                                  ptx::kTransformVersion};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  TALLY_ASSIGN_OR_RETURN(
      Backend backend, Backend::Load({options.emulate, options.device, options.emulator_library}));
  TALLY_LOG_INFO("tally-server: device backend is the {}", backend.description());
  TALLY_RETURN_IF_ERROR(backend.MakeCurrent());
  TALLY_ASSIGN_OR_RETURN(const ipc::GetDeviceInfoResponse info, QueryDeviceInfo(backend));
  std::string path = options.socket_path;
  if (path.empty()) {
    TALLY_ASSIGN_OR_RETURN(path, ipc::ResolveSocketPath(ipc::DirectoryMode::kCreate));
  }
  ipc::ListenerOptions listen;
  listen.path = path;
  listen.schema_version = ipc::kCudaCallsSchemaVersion;
  TALLY_ASSIGN_OR_RETURN(ipc::Listener listener, ipc::Listener::Listen(std::move(listen)));
  TALLY_LOG_INFO("tally-server: serving '{}' on {}", info.name, listener.path());

  const SchedulingTimes times = options.Times(backend.emulated());
  profiler::ProfilerOptions profiling;
  profiling.turnaround_threshold = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(times.turnaround_ms));
  TALLY_ASSIGN_OR_RETURN(profiling.device, IdentifyDevice(backend, info));
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
    config.advisor = profiler.get();
    TALLY_ASSIGN_OR_RETURN(policy, scheduler::MakePolicy(options.policy, config));
    TALLY_LOG_INFO(
        "tally-server: policy {} (min idle {} ms, long idle {} ms, turnaround {} ms{})",
        options.policy, times.min_idle_ms, times.long_idle_ms, times.turnaround_ms,
        backend.emulated() ? ", the emulated GPU's scaled defaults" : "");
  }
  // The profiler only where a policy shapes kernels: elsewhere its timing would be wasted.
  if (!policy->UsesTransformedForms() || options.validate) profiler.reset();
  std::unique_ptr<Server> server(new Server(std::move(backend), info, std::move(listener),
                                            std::move(profiler), policy->UsesTransformedForms(),
                                            options.max_client_priority));
  TALLY_RETURN_IF_ERROR(server->Start(std::move(policy)));
  return server;
}

Server::Server(Backend backend, ipc::GetDeviceInfoResponse device_info, ipc::Listener listener,
               std::unique_ptr<profiler::Profiler> profiler, bool build_forms,
               std::optional<int32_t> max_client_priority)
    : backend_(std::move(backend)),
      device_info_(device_info),
      profiler_(std::move(profiler)),
      max_client_priority_(max_client_priority),
      modules_(backend_, build_forms),
      listener_(std::move(listener)) {}

absl::Status Server::Start(std::unique_ptr<scheduler::Policy> policy) {
  const scheduler::Duration max_poll = backend_.emulated() ? std::chrono::milliseconds(1)
                                                           : std::chrono::microseconds(200);
  TALLY_ASSIGN_OR_RETURN(dispatcher_,
                         Dispatcher::Create(backend_, std::move(policy), profiler_.get(), max_poll,
                                            [this] {
                                              const absl::Status current = backend_.MakeCurrent();
                                              if (!current.ok()) {
                                                TALLY_LOG_ERROR("dispatcher: {}",
                                                                current.ToString());
                                              }
                                            }));
  context_ = std::make_unique<ServerContext>(
      ServerContext{backend_, modules_, *dispatcher_, device_info_, &sessions_});
  return absl::OkStatus();
}

Server::~Server() {
  stopping_ = true;
  for (ClientThread& client : clients_) client.thread.join();
  dispatcher_.reset();  // before the profiler it reports to
  if (profiler_ != nullptr) {
    if (const absl::Status saved = profiler_->Save(); !saved.ok()) {
      TALLY_LOG_WARN("tally-server: the profiles were not saved: {}", saved.ToString());
    }
  }
}

absl::Status Server::Run() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  ipc::UniqueFd signal_fd(signalfd(-1, &signals, SFD_CLOEXEC));
  if (!signal_fd.valid()) {
    return absl::InternalError(absl::StrFormat("signalfd: %s", std::strerror(errno)));
  }
  while (true) {
    pollfd fds[2] = {{listener_.fd(), POLLIN, 0}, {signal_fd.get(), POLLIN, 0}};
    if (poll(fds, 2, /*timeout_ms=*/100) < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrFormat("poll: %s", std::strerror(errno)));
    }
    JoinFinishedClients();
    SaveProfilesNowAndThen();
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      [[maybe_unused]] ssize_t n = read(signal_fd.get(), &info, sizeof(info));
      TALLY_LOG_INFO("tally-server: {} received, shutting down", strsignal(info.ssi_signo));
      break;
    }
    if (!(fds[0].revents & POLLIN)) continue;
    auto accepted = listener_.AcceptAny();
    if (!accepted.ok()) {
      TALLY_LOG_WARN("tally-server: refused a client: {}", accepted.status().ToString());
      continue;
    }
    if (auto* control = std::get_if<ipc::ControlConnection>(&*accepted)) {
      AnswerControl(*control);
      continue;
    }
    auto connection = std::make_shared<ipc::ServerConnection>(
        std::move(std::get<ipc::ServerConnection>(*accepted)));
    ClientThread& client = clients_.emplace_back();
    client.thread =
        std::thread([this, &client, connection] { Serve(std::move(*connection), client.done); });
  }
  stopping_ = true;
  for (ClientThread& client : clients_) client.thread.join();
  clients_.clear();
  return absl::OkStatus();
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
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->done) {
      it->thread.join();
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::AnswerControl(ipc::ControlConnection& control) {
  switch (control.kind()) {
    case ipc::ControlKind::kStatus:
      return AnswerStatus(control);
    case ipc::ControlKind::kSetPriority:
      return AnswerPriority(control);
    case ipc::ControlKind::kProfiles:
      return AnswerProfiles(control);
  }
}

void Server::AnswerStatus(ipc::ControlConnection& control) {
  ipc::StatusReply reply{};
  reply.server_pid = getpid();
  reply.backend = static_cast<uint32_t>(backend_.emulated() ? ipc::Backend::kEmulator
                                                            : ipc::Backend::kNvidiaDriver);
  reply.total_memory = device_info_.total_memory;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (backend_.api().cuMemGetInfo(&free_bytes, &total_bytes) == CUDA_SUCCESS) {
    reply.free_memory = free_bytes;
  }
  ipc::CopyText(device_info_.name, reply.device_name, sizeof(reply.device_name));
  ipc::CopyText(backend_.description(), reply.backend_description,
                sizeof(reply.backend_description));
  const absl::Status sent = control.SendStatus(reply, sessions_.Report());
  if (!sent.ok()) {
    TALLY_LOG_WARN("tally-server: status for pid {} not sent: {}", control.pid(), sent.ToString());
  }
}

void Server::AnswerPriority(ipc::ControlConnection& control) {
  const ipc::ControlRequest& request = control.request();
  const ClientPriority priority = ClientPriority::Level(request.priority);
  ipc::PriorityReply reply{};
  reply.priority = request.priority;
  reply.found = sessions_.SetPriority(request.client_id, priority) ? 1 : 0;
  const std::string message =
      reply.found != 0
          ? absl::StrFormat("client %d now has priority %s", request.client_id, priority.ToString())
          : absl::StrFormat("no client %d is connected", request.client_id);
  if (reply.found != 0) TALLY_LOG_INFO("tally-ctl (pid {}): {}", control.pid(), message);
  ipc::CopyText(message, reply.message, sizeof(reply.message));
  const absl::Status sent = control.SendPriority(reply);
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

void Server::Serve(ipc::ServerConnection connection, std::atomic<bool>& done) {
  ipc::ClientInfo client = connection.client();
  TALLY_LOG_INFO("client {} connected: pid {}, priority {}, '{}'", client.client_id, client.pid,
                 client.priority.ToString(), client.command);
  if (max_client_priority_ && client.priority.level() > *max_client_priority_) {
    client.priority = ClientPriority::Level(*max_client_priority_);
    TALLY_LOG_WARN("client {}: priority capped to {} (--max-client-priority)", client.client_id,
                   client.priority.ToString());
  }
  ipc::WaitOptions wait = connection.MakeWaitOptions(absl::InfiniteDuration());
  wait.liveness = [this, &connection]() -> absl::Status {
    if (stopping_) return absl::CancelledError("the server is shutting down");
    return connection.CheckPeerAlive();
  };
  ResponseWriter responses(connection.responses(), wait);  // outlives the session's waiters
  absl::Status status = backend_.MakeCurrent();
  if (status.ok()) {
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(*context_, client, connection.bulk(),
                        connection.host_region().value_or(std::span<std::byte>{}));
    if (session.ok()) (*session)->host_callbacks().Attach(&connection.callbacks(), wait);
    status =
        session.ok() ? ServeRequests(**session, connection, wait, responses) : session.status();
  }  // the session's destructor has freed what the client owned
  if (absl::IsUnavailable(status) || stopping_) {
    TALLY_LOG_DEBUG("client {} ended: {}", client.client_id, status.ToString());
  } else {
    TALLY_LOG_WARN("client {} ended: {}", client.client_id, status.ToString());
  }
  done = true;
}

}  // namespace tally::server
