// The handshake on both sides and the assembly of a connection from socket, segment and rings.
#include "ipc/connection.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/handshake.h"
#include "ipc/protocol_version.h"
#include "ipc/syscall.h"
#include "ipc/unix_socket.h"

namespace tally::ipc {
namespace {

absl::Status SendReply(int socket, HelloStatus status, uint32_t schema_version, ClientId client_id,
                       const SegmentLayout& layout, int segment_fd, std::string_view reason = {},
                       absl::Duration wait = absl::ZeroDuration()) {
  HelloReply reply{};
  reply.wait_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(wait));
  reply.prefix = {kReplyMagic, kProtocolVersion, sizeof(HelloReply), 0};
  reply.status = static_cast<uint32_t>(status);
  reply.schema_version = schema_version;
  reply.client_id = client_id;
  reply.layout = layout;
  reason.copy(reply.reason, sizeof(reply.reason) - 1);
  return SendAll(socket, BytesOf(reply), segment_fd);
}

}  // namespace

WaitOptions WaitOptionsFor(int socket_fd, absl::Duration timeout) {
  WaitOptions options;
  options.timeout = timeout;
  options.liveness = [socket_fd] { return CheckPeerAlive(socket_fd); };
  return options;
}

ServerConnection::ServerConnection(UniqueFd socket, Segment segment, ClientInfo client)
    : socket_(std::move(socket)),
      segment_(std::move(segment)),
      requests_(segment_.request_ring(), segment_.layout().request_ring_capacity),
      responses_(segment_.response_ring(), segment_.layout().response_ring_capacity),
      callbacks_(segment_.callback_ring(), segment_.layout().callback_ring_capacity),
      bulk_(segment_.bulk()),
      client_(std::move(client)) {}

absl::Status ServerConnection::CheckPeerAlive() const { return ipc::CheckPeerAlive(socket_.get()); }

absl::StatusOr<Listener> Listener::Listen(ListenerOptions options) {
  TALLY_RETURN_IF_ERROR(ComputeLayout(options.segment).status());
  TALLY_ASSIGN_OR_RETURN(UniqueFd fd, ListenUnix(options.path));
  // Connecting needs write permission on the socket file: it follows --access (the peers'
  // credentials are checked at each connection all the same).
  const char* path = options.path.c_str();
  if (const std::optional<gid_t> group = options.access.socket_group()) {
    TALLY_RETURN_IF_ERROR(RetryEintr(absl::StrFormat("chown(%s)", options.path), [&] {
                            return chown(path, static_cast<uid_t>(-1), *group);
                          }).status());
  }
  TALLY_RETURN_IF_ERROR(RetryEintr(absl::StrFormat("chmod(%s)", options.path), [&] {
                          return chmod(path, options.access.socket_mode());
                        }).status());
  struct stat st {};
  TALLY_RETURN_IF_ERROR(RetryEintr(absl::StrFormat("stat(%s)", options.path), [&] {
                          return stat(path, &st);
                        }).status());
  if (options.next_client_id == nullptr) {
    options.next_client_id = std::make_shared<std::atomic<uint64_t>>(1);
  }
  return Listener(std::move(options), std::move(fd), st.st_dev, st.st_ino);
}

Listener::~Listener() {
  if (fd_.valid()) Unlink();  // else moved from
}

void Listener::Unlink() const {
  // Another server may have replaced a socket file we lost; leave its file alone.
  struct stat st {};
  const absl::Status found =
      RetryEintr("stat", [&] { return stat(options_.path.c_str(), &st); }).status();
  if (found.ok() && st.st_dev == dev_ && st.st_ino == ino_) {
    RetryEintr("unlink", [&] { return unlink(options_.path.c_str()); }).status().IgnoreError();
  }
}

namespace {

absl::StatusOr<ControlConnection> AcceptControl(UniqueFd socket, const HandshakePrefix& prefix,
                                                const PeerCredentials& peer, absl::Time deadline) {
  if (prefix.protocol_version != kProtocolVersion) {
    // The bare status prefix carries our version, which the tool then names.
    const HandshakePrefix reply{kControlReplyMagic, kProtocolVersion, sizeof(StatusReply), 0};
    SendAll(socket.get(), std::as_bytes(std::span(&reply, 1))).IgnoreError();
    return absl::FailedPreconditionError(absl::StrFormat(
        "control request from pid %d speaks IPC protocol version %d, this server version %d",
        peer.pid, prefix.protocol_version, kProtocolVersion));
  }
  ControlRequest request{};
  request.prefix = prefix;
  if (prefix.size != sizeof(ControlRequest)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pid %d sent a %d-byte control request, expected %d", peer.pid, prefix.size,
        sizeof(ControlRequest)));
  }
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket.get(), BytesAfterPrefix(request), deadline));
  switch (static_cast<ControlKind>(request.kind)) {
    case ControlKind::kStatus:
    case ControlKind::kSetPriority:
    case ControlKind::kProfiles:
    case ControlKind::kSetMemoryLimit:
    case ControlKind::kDrain:
    case ControlKind::kGrant:
    case ControlKind::kRevoke:
    case ControlKind::kSetBudget:
    case ControlKind::kCodeCache:
    case ControlKind::kClearCodeCache:
      return ControlConnection(std::move(socket), request, peer.pid, peer.uid);
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("pid %d sent control request kind %d", peer.pid, request.kind));
}

// Requests that change the server or its clients, which only its administrators may make.
bool Changes(ControlKind kind) {
  switch (kind) {
    case ControlKind::kStatus:
    case ControlKind::kProfiles:
    case ControlKind::kCodeCache:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string ApplyCeiling(const ClientCeiling& ceiling, ClientInfo& client) {
  std::vector<std::string> lowered;
  const ClientPriority asked = client.priority;
  if (!asked.is_set()) {
    client.priority = ceiling.max_priority;
  } else if (asked.level() > ceiling.max_priority.level()) {
    client.priority = ceiling.max_priority;
    lowered.push_back(
        absl::StrFormat("priority %s, not %s", ceiling.max_priority.ToString(), asked.ToString()));
  }
  const uint64_t wish = client.memory_limit == 0 ? kNoLimit : client.memory_limit;
  if (wish > ceiling.memory_limit) {
    client.memory_limit = ceiling.memory_limit;
    if (client.memory_limit != 0 && wish != kNoLimit) {
      lowered.push_back(
          absl::StrFormat("a device-memory limit of %d bytes, not %d", ceiling.memory_limit, wish));
    }
  }
  client.pinned_limit = ceiling.pinned_limit;
  client.grant = ceiling.grant;
  if (lowered.empty()) return {};
  return absl::StrFormat("grant '%s' gives this job %s (a job may ask for less, never more)",
                         ceiling.grant, absl::StrJoin(lowered, " and "));
}

std::string Listener::RefuseControl(const ControlConnection& control) const {
  if (options_.ceiling) {
    return absl::StrFormat(
        "this is the socket of grant '%s', which serves jobs only; ask the server's own socket",
        options_.ceiling->grant);
  }
  if (Changes(control.kind()) && !options_.access.MayAdminister(control.uid())) {
    return absl::StrFormat(
        "uid %d may not change this server: only its own user (uid %d) and root may", control.uid(),
        options_.access.owner());
  }
  return {};
}

absl::StatusOr<ServerConnection> Listener::Accept() {
  TALLY_ASSIGN_OR_RETURN(auto accepted, AcceptAny());
  if (auto* client = std::get_if<ServerConnection>(&accepted)) return std::move(*client);
  return absl::FailedPreconditionError("a control request reached a listener for clients only");
}

absl::StatusOr<PendingPeer> Listener::AcceptPeer() {
  TALLY_ASSIGN_OR_RETURN(UniqueFd socket, AcceptUnix(fd_.get()));
  TALLY_ASSIGN_OR_RETURN(const PeerCredentials peer, GetPeerCredentials(socket.get()));
  return PendingPeer{std::move(socket), peer.pid, peer.uid, peer.gid,
                     ClientId(options_.next_client_id->fetch_add(1))};
}

absl::StatusOr<std::variant<ServerConnection, ControlConnection>> Listener::AcceptAny() {
  TALLY_ASSIGN_OR_RETURN(PendingPeer peer, AcceptPeer());
  return Handshake(std::move(peer));
}

absl::StatusOr<std::variant<ServerConnection, ControlConnection>> Listener::Handshake(
    PendingPeer peer, const Admission& admit) const {
  UniqueFd& socket = peer.socket;
  const ClientId client_id = peer.client_id;
  const uint32_t schema = options_.schema_version;
  const PeerCredentials credentials{peer.pid, peer.uid, peer.gid};
  // Replies to refused clients are best effort: they explain, but the refusal stands anyway.
  if (const absl::Status admitted = options_.access.Admit(socket.get(), credentials);
      !admitted.ok()) {
    SendReply(socket.get(), HelloStatus::kRefused, schema, client_id, {}, -1,
              std::string(admitted.message()))
        .IgnoreError();
    return admitted;
  }
  const absl::Time deadline = absl::Now() + options_.handshake_timeout;
  Hello hello{};
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket.get(), BytesOf(hello.prefix), deadline));
  if (hello.prefix.magic == kControlMagic) {
    TALLY_ASSIGN_OR_RETURN(ControlConnection control,
                           AcceptControl(std::move(socket), hello.prefix, credentials, deadline));
    if (const std::string refusal = RefuseControl(control); !refusal.empty()) {
      SendReply(control.socket(), HelloStatus::kRefused, schema, client_id, {}, -1, refusal)
          .IgnoreError();
      return absl::PermissionDeniedError(
          absl::StrFormat("refused a control request of pid %d: %s", peer.pid, refusal));
    }
    return control;
  }
  if (hello.prefix.magic != kHelloMagic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "pid %d did not start with a Tally hello (magic 0x%08x)", peer.pid, hello.prefix.magic));
  }
  if (hello.prefix.protocol_version != kProtocolVersion) {
    SendReply(socket.get(), HelloStatus::kVersionMismatch, schema, client_id, {}, -1).IgnoreError();
    return absl::FailedPreconditionError(absl::StrFormat(
        "client pid %d speaks IPC protocol version %d but this server speaks version %d; run "
        "clients and server from the same Tally build",
        peer.pid, hello.prefix.protocol_version, kProtocolVersion));
  }
  if (hello.prefix.size != sizeof(Hello)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("pid %d sent a %d-byte hello, version %d has %d bytes", peer.pid,
                        hello.prefix.size, kProtocolVersion, sizeof(Hello)));
  }
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket.get(), BytesAfterPrefix(hello), deadline));
  if (hello.schema_version != schema) {
    SendReply(socket.get(), HelloStatus::kSchemaMismatch, schema, client_id, {}, -1).IgnoreError();
    return absl::FailedPreconditionError(
        absl::StrFormat("client pid %d uses message schema %d but this server uses schema %d",
                        peer.pid, hello.schema_version, schema));
  }
  const std::optional<SlowdownBudget> budget = hello.slowdown_budget.ToBudget();
  if (const absl::Status valid = budget ? budget->Validate() : absl::OkStatus(); !valid.ok()) {
    const std::string reason = absl::StrFormat("its slowdown budget: %s", valid.message());
    SendReply(socket.get(), HelloStatus::kInvalid, schema, client_id, {}, -1, reason).IgnoreError();
    return absl::InvalidArgumentError(absl::StrFormat("client pid %d: %s", peer.pid, reason));
  }
  ClientInfo client{client_id,
                    peer.pid,
                    peer.uid,
                    hello.client_priority.ToPriority(),
                    std::string(hello.command, strnlen(hello.command, kCommandSize)),
                    hello.memory_limit,
                    kNoLimit,
                    "",
                    budget};
  std::vector<std::string> notices;
  if (options_.ceiling) notices.push_back(ApplyCeiling(*options_.ceiling, client));
  if (options_.notice) notices.push_back(options_.notice(client));
  std::erase(notices, std::string());
  const std::string notice = absl::StrJoin(notices, "; ");
  if (admit) {
    const AdmissionWait wait{[&](const std::string& reason, absl::Duration at_most) {
                               return SendReply(socket.get(), HelloStatus::kWaiting, schema,
                                                client_id, {}, -1, reason, at_most);
                             },
                             [&] { return !CheckPeerAlive(socket.get()).ok(); }};
    if (const std::string refusal = admit(client, wait); !refusal.empty()) {
      SendReply(socket.get(), HelloStatus::kServerFull, schema, client_id, {}, -1, refusal)
          .IgnoreError();
      return absl::ResourceExhaustedError(
          absl::StrFormat("refused client pid %d ('%s'): %s", peer.pid, client.command, refusal));
    }
  }
  TALLY_ASSIGN_OR_RETURN(Segment segment, Segment::Create(options_.segment));
  TALLY_RETURN_IF_ERROR(SendReply(socket.get(), HelloStatus::kAccepted, schema, client_id,
                                  segment.layout(), segment.fd().get(), notice));
  TALLY_LOG_DEBUG("IPC: client {} (pid {}, '{}') connected", client_id, peer.pid, client.command);
  return ServerConnection(std::move(socket), std::move(segment), std::move(client));
}

ClientConnection::ClientConnection(UniqueFd socket, Segment segment,
                                   std::unique_ptr<BulkAllocator> bulk, ClientId client_id)
    : socket_(std::move(socket)),
      segment_(std::move(segment)),
      requests_(segment_.request_ring(), segment_.layout().request_ring_capacity),
      responses_(segment_.response_ring(), segment_.layout().response_ring_capacity),
      callbacks_(segment_.callback_ring(), segment_.layout().callback_ring_capacity),
      bulk_allocator_(std::move(bulk)),
      client_id_(client_id) {}

absl::Status ClientConnection::CheckPeerAlive() const { return ipc::CheckPeerAlive(socket_.get()); }

namespace {

// The reply, checked prefix first so that another protocol version is named, not misparsed.
absl::StatusOr<HelloReply> ReceiveReply(int socket, const std::string& path, absl::Time deadline,
                                        UniqueFd* segment_fd) {
  HelloReply reply{};
  // The memfd is attached to the reply's first bytes, so it can arrive with the prefix.
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket, BytesOf(reply.prefix), deadline, segment_fd));
  if (reply.prefix.magic != kReplyMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s answered with something that is not a Tally handshake", path));
  }
  if (reply.prefix.protocol_version != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the Tally server on %s speaks IPC protocol version %d but this client speaks version "
        "%d; run clients and server from the same Tally build",
        path, reply.prefix.protocol_version, kProtocolVersion));
  }
  if (reply.prefix.size != sizeof(HelloReply)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the server on %s sent a %d-byte handshake reply, version %d has %d bytes",
                        path, reply.prefix.size, kProtocolVersion, sizeof(HelloReply)));
  }
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket, BytesAfterPrefix(reply), deadline, segment_fd));
  return reply;
}

absl::Status CheckAccepted(const HelloReply& reply, const std::string& path,
                           uint32_t schema_version) {
  switch (static_cast<HelloStatus>(reply.status)) {
    case HelloStatus::kAccepted:
      return absl::OkStatus();
    case HelloStatus::kSchemaMismatch:
      return absl::FailedPreconditionError(absl::StrFormat(
          "the Tally server on %s uses message schema %d but this client uses schema %d", path,
          reply.schema_version, schema_version));
    case HelloStatus::kRefused:
      return absl::PermissionDeniedError(
          absl::StrFormat("the Tally server on %s refused us: %s", path, ReasonOf(reply)));
    case HelloStatus::kServerFull:
      return absl::ResourceExhaustedError(
          absl::StrFormat("the Tally server on %s refused us: %s", path, ReasonOf(reply)));
    case HelloStatus::kInvalid:
      return absl::InvalidArgumentError(
          absl::StrFormat("the Tally server on %s refused us: %s", path, ReasonOf(reply)));
    case HelloStatus::kVersionMismatch:
    case HelloStatus::kWaiting:  // a second one
      break;  // impossible with equal versions: the server is broken
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("the Tally server on %s answered with status %d", path, reply.status));
}

}  // namespace

absl::StatusOr<ClientConnection> ClientConnection::Connect(const ConnectOptions& options) {
  TALLY_ASSIGN_OR_RETURN(UniqueFd socket, ConnectUnix(options.path));
  TALLY_ASSIGN_OR_RETURN(const PeerCredentials server, GetPeerCredentials(socket.get()));
  TALLY_RETURN_IF_ERROR(options.trust.Check(options.path, server));
  Hello hello{};
  hello.prefix = {kHelloMagic, kProtocolVersion, sizeof(Hello), 0};
  hello.schema_version = options.schema_version;
  hello.pid = getpid();
  hello.client_priority = WireClientPriority::From(options.priority);
  hello.memory_limit = options.memory_limit;
  hello.slowdown_budget = WireSlowdownBudget::From(options.slowdown_budget);
  std::memcpy(hello.command, options.command.data(),
              std::min(options.command.size(), kCommandSize - 1));
  const absl::Time deadline = absl::Now() + options.handshake_timeout;
  // A server that refuses us may close before our hello is out; its reply still explains why.
  const absl::Status sent = SendAll(socket.get(), BytesOf(hello));
  UniqueFd segment_fd;
  absl::StatusOr<HelloReply> reply =
      ReceiveReply(socket.get(), options.path, deadline, &segment_fd);
  if (!reply.ok()) return sent.ok() ? reply.status() : sent;
  if (reply->status == static_cast<uint32_t>(HelloStatus::kWaiting)) {
    if (options.on_wait) options.on_wait(ReasonOf(*reply));
    // At most an hour, whatever the peer says (tally-server bounds its timeout so).
    const absl::Duration wait = absl::Milliseconds(std::min<uint64_t>(reply->wait_ms, 3'600'000));
    reply = ReceiveReply(socket.get(), options.path, absl::Now() + wait + options.handshake_timeout,
                         &segment_fd);
    if (!reply.ok()) return reply.status();
  }
  TALLY_RETURN_IF_ERROR(CheckAccepted(*reply, options.path, options.schema_version));
  if (!segment_fd.valid()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the Tally server on %s accepted us but sent no shared segment", options.path));
  }
  TALLY_ASSIGN_OR_RETURN(Segment segment, Segment::Attach(std::move(segment_fd), reply->layout));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<BulkAllocator> bulk,
                         BulkAllocator::Create(segment.bulk()));
  ClientConnection connection(std::move(socket), std::move(segment), std::move(bulk),
                              reply->client_id);
  connection.notice_ = ReasonOf(*reply);
  return connection;
}

}  // namespace tally::ipc
