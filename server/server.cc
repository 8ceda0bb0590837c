// The accept loop, the per-client request loop, and shutdown.
#include "server/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <variant>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
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
  std::unique_ptr<scheduler::Policy> policy = scheduler::MakeFifoPolicy();
  if (options.validate.kind != scheduler::FormKind::kOriginal) {
    TALLY_LOG_INFO("tally-server: validation mode: every transformable kernel runs {}",
                   DescribeForm(options.validate));
    policy = scheduler::MakeValidationPolicy(options.validate);
  }
  return std::unique_ptr<Server>(
      new Server(std::move(backend), info, std::move(listener), std::move(policy)));
}

Server::Server(Backend backend, ipc::GetDeviceInfoResponse device_info, ipc::Listener listener,
               std::unique_ptr<scheduler::Policy> policy)
    : backend_(std::move(backend)),
      device_info_(device_info),
      modules_(backend_, policy->UsesTransformedForms()),
      dispatcher_(std::move(policy),
                  [this] {
                    const absl::Status current = backend_.MakeCurrent();
                    if (!current.ok()) TALLY_LOG_ERROR("dispatcher: {}", current.ToString());
                  }),
      launcher_(backend_, dispatcher_),
      context_{backend_, modules_, dispatcher_, device_info_, launcher_, &sessions_},
      listener_(std::move(listener)) {}

Server::~Server() {
  stopping_ = true;
  for (ClientThread& client : clients_) client.thread.join();
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

void Server::Serve(ipc::ServerConnection connection, std::atomic<bool>& done) {
  const ipc::ClientInfo& client = connection.client();
  TALLY_LOG_INFO("client {} connected: pid {}, priority {}, '{}'", client.client_id, client.pid,
                 client.priority, client.command);
  ipc::WaitOptions wait = connection.MakeWaitOptions(absl::InfiniteDuration());
  wait.liveness = [this, &connection]() -> absl::Status {
    if (stopping_) return absl::CancelledError("the server is shutting down");
    return connection.CheckPeerAlive();
  };
  ResponseWriter responses(connection.responses(), wait);  // outlives the session's waiters
  absl::Status status = backend_.MakeCurrent();
  if (status.ok()) {
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(context_, client, connection.bulk(),
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
