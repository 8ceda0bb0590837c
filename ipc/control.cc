// Both ends of the control connection: the server's answers and the tools' queries.
#include "ipc/control.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/protocol_version.h"
#include "ipc/syscall.h"
#include "ipc/unix_socket.h"

namespace tally::ipc {
namespace {

template <typename T>
void Append(std::vector<std::byte>& out, const T& value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <typename T>
std::vector<std::byte> Encode(T reply, std::span<const std::byte> records = {}) {
  reply.prefix = {kControlReplyMagic, kProtocolVersion, sizeof(T), 0};
  std::vector<std::byte> bytes;
  bytes.reserve(sizeof(T) + records.size());
  Append(bytes, reply);
  bytes.insert(bytes.end(), records.begin(), records.end());
  return bytes;
}

// Text fields come from the peer: never trust them to be terminated.
void Terminate(char* field, size_t size) { field[size - 1] = '\0'; }

// Sends `request` to the server on `path` and reads its reply struct T; the socket stays open
// for the records that follow.
template <typename T>
absl::StatusOr<T> Ask(const std::string& path, ControlRequest request, absl::Time deadline,
                      const ServerTrust& trust, UniqueFd& socket) {
  TALLY_ASSIGN_OR_RETURN(socket, ConnectUnix(path));
  TALLY_ASSIGN_OR_RETURN(const PeerCredentials server, GetPeerCredentials(socket.get()));
  TALLY_RETURN_IF_ERROR(trust.Check(path, server));
  request.prefix = {kControlMagic, kProtocolVersion, sizeof(ControlRequest), 0};
  const absl::Status sent = SendAll(socket.get(), BytesOf(request));
  T reply{};
  HandshakePrefix& prefix = reply.prefix;
  if (const absl::Status received = ReceiveExact(socket.get(), BytesOf(prefix), deadline);
      !received.ok()) {
    return sent.ok() ? received : sent;
  }
  if (prefix.magic == kReplyMagic) {  // a HelloReply: the server refused the request
    HelloReply refusal{};
    refusal.prefix = prefix;
    if (prefix.size == sizeof(HelloReply)) {
      ReceiveExact(socket.get(), BytesAfterPrefix(refusal), deadline).IgnoreError();
    }
    return absl::PermissionDeniedError(
        absl::StrFormat("the Tally server on %s refused us: %s", path, ReasonOf(refusal)));
  }
  if (prefix.magic != kControlReplyMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s answered with something that is not a Tally control reply", path));
  }
  if (prefix.protocol_version != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the Tally server on %s speaks IPC protocol version %d but this tool speaks version %d; "
        "use the tally-ctl of the server's build",
        path, prefix.protocol_version, kProtocolVersion));
  }
  if (prefix.size != sizeof(T)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the server on %s sent a %d-byte reply, expected %d", path, prefix.size, sizeof(T)));
  }
  TALLY_RETURN_IF_ERROR(ReceiveExact(socket.get(), BytesAfterPrefix(reply), deadline));
  return reply;
}

template <typename Record>
absl::StatusOr<std::vector<Record>> ReceiveRecords(int socket, uint32_t count, uint32_t max,
                                                   const std::string& path, absl::Time deadline) {
  if (count > max) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the server on %s reports %d records, more than the %d allowed", path, count, max));
  }
  std::vector<Record> records(count);
  for (Record& record : records) {
    TALLY_RETURN_IF_ERROR(ReceiveExact(socket, BytesOf(record), deadline));
  }
  return records;
}

void TerminateGrant(GrantStatus& grant) {
  Terminate(grant.name, sizeof(grant.name));
  Terminate(grant.socket, sizeof(grant.socket));
}

// A request of `kind`, every other field zero.
ControlRequest RequestOf(ControlKind kind) {
  ControlRequest request{};
  request.kind = static_cast<uint32_t>(kind);
  return request;
}

// A request of `kind` about the client `client_id`.
ControlRequest AboutClient(ControlKind kind, ClientId client_id) {
  ControlRequest request = RequestOf(kind);
  request.client_id = client_id;
  return request;
}

// A change to one client (`request` names it): the reply, its message terminated.
template <typename Reply>
absl::StatusOr<Reply> ChangeClient(const std::string& path, const ControlRequest& request,
                                   absl::Duration timeout, const ServerTrust& trust) {
  UniqueFd socket;
  TALLY_ASSIGN_OR_RETURN(Reply reply,
                         Ask<Reply>(path, request, absl::Now() + timeout, trust, socket));
  Terminate(reply.message, sizeof(reply.message));
  return reply;
}

absl::StatusOr<GrantReply> AskAboutGrant(const std::string& path, const ControlRequest& request,
                                         absl::Duration timeout, const ServerTrust& trust) {
  TALLY_ASSIGN_OR_RETURN(GrantReply reply, ChangeClient<GrantReply>(path, request, timeout, trust));
  TerminateGrant(reply.grant);
  return reply;
}

}  // namespace

DeviceUuid DeviceUuidOf(const StatusReply& reply) {
  DeviceUuid uuid{};
  std::memcpy(uuid.data(), reply.device_uuid, uuid.size());
  return uuid;
}

void CopyText(const std::string& text, char* field, size_t field_size) {
  const size_t n = std::min(text.size(), field_size - 1);
  std::memcpy(field, text.data(), n);
  std::memset(field + n, 0, field_size - n);
}

std::string_view IsolationName(Isolation isolation) {
  switch (isolation) {
    case Isolation::kNone:
      return "none";
    case Isolation::kFenced:
      return "fenced";
    case Isolation::kStrict:
      return "strict";
  }
  return "unknown";
}

std::string_view UnfenceableName(Unfenceable unfenceable) {
  switch (unfenceable) {
    case Unfenceable::kRefuse:
      return "refuse";
    case Unfenceable::kAlone:
      return "alone";
  }
  return "unknown";
}

absl::Status ControlConnection::Send(std::span<const std::byte> bytes) {
  const timeval limit{.tv_sec = 1, .tv_usec = 0};
  TALLY_RETURN_IF_ERROR(RetryEintr("setsockopt(SO_SNDTIMEO)", [&] {
                          return setsockopt(socket_.get(), SOL_SOCKET, SO_SNDTIMEO, &limit,
                                            sizeof(limit));
                        }).status());
  return SendAll(socket_.get(), bytes);
}

absl::Status ControlConnection::SendStatus(StatusReply reply, std::span<const ClientStatus> clients,
                                           std::span<const GrantStatus> grants) {
  reply.client_count = static_cast<uint32_t>(std::min<size_t>(clients.size(), kMaxReportedClients));
  reply.grant_count = static_cast<uint32_t>(std::min<size_t>(grants.size(), kMaxReportedGrants));
  std::vector<std::byte> records;
  const auto client_bytes = std::as_bytes(clients.first(reply.client_count));
  const auto grant_bytes = std::as_bytes(grants.first(reply.grant_count));
  records.reserve(client_bytes.size() + grant_bytes.size());
  records.insert(records.end(), client_bytes.begin(), client_bytes.end());
  records.insert(records.end(), grant_bytes.begin(), grant_bytes.end());
  return Send(Encode(reply, records));
}

absl::Status ControlConnection::SendGrant(GrantReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendPriority(PriorityReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendLimit(LimitReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendBudget(BudgetReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendDrain(DrainReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendCodeCache(CodeCacheReply reply) { return Send(Encode(reply)); }

absl::Status ControlConnection::SendProfiles(std::span<const ProfileStatus> profiles) {
  ProfilesReply reply{};
  reply.count = static_cast<uint32_t>(std::min<size_t>(profiles.size(), kMaxReportedProfiles));
  return Send(Encode(reply, std::as_bytes(profiles.first(reply.count))));
}

absl::StatusOr<StatusReport> QueryStatus(const std::string& path, absl::Duration timeout,
                                         const ServerTrust& trust) {
  const absl::Time deadline = absl::Now() + timeout;
  const ControlRequest request = RequestOf(ControlKind::kStatus);
  UniqueFd socket;
  StatusReport report{};
  TALLY_ASSIGN_OR_RETURN(report.server, Ask<StatusReply>(path, request, deadline, trust, socket));
  Terminate(report.server.device_name, sizeof(report.server.device_name));
  Terminate(report.server.backend_description, sizeof(report.server.backend_description));
  Terminate(report.server.code_cache.dir, sizeof(report.server.code_cache.dir));
  TALLY_ASSIGN_OR_RETURN(report.clients,
                         ReceiveRecords<ClientStatus>(socket.get(), report.server.client_count,
                                                      kMaxReportedClients, path, deadline));
  for (ClientStatus& client : report.clients) {
    Terminate(client.command, sizeof(client.command));
    Terminate(client.grant, sizeof(client.grant));
  }
  TALLY_ASSIGN_OR_RETURN(report.grants,
                         ReceiveRecords<GrantStatus>(socket.get(), report.server.grant_count,
                                                     kMaxReportedGrants, path, deadline));
  for (GrantStatus& grant : report.grants) TerminateGrant(grant);
  return report;
}

absl::StatusOr<PriorityReply> SetClientPriority(const std::string& path, ClientId client_id,
                                                int32_t priority, absl::Duration timeout,
                                                const ServerTrust& trust) {
  ControlRequest request = AboutClient(ControlKind::kSetPriority, client_id);
  request.client_priority_level = priority;
  return ChangeClient<PriorityReply>(path, request, timeout, trust);
}

absl::StatusOr<BudgetReply> SetClientBudget(const std::string& path, ClientId client_id,
                                            const SlowdownBudget& budget, absl::Duration timeout,
                                            const ServerTrust& trust) {
  ControlRequest request = AboutClient(ControlKind::kSetBudget, client_id);
  request.slowdown_budget = WireSlowdownBudget::From(budget);
  return ChangeClient<BudgetReply>(path, request, timeout, trust);
}

absl::StatusOr<LimitReply> SetClientMemoryLimit(const std::string& path, ClientId client_id,
                                                uint64_t memory_limit, absl::Duration timeout,
                                                const ServerTrust& trust) {
  ControlRequest request = AboutClient(ControlKind::kSetMemoryLimit, client_id);
  request.memory_limit = memory_limit;
  return ChangeClient<LimitReply>(path, request, timeout, trust);
}

absl::StatusOr<DrainReply> DrainServer(const std::string& path, absl::Duration timeout,
                                       const ServerTrust& trust) {
  const ControlRequest request = RequestOf(ControlKind::kDrain);
  return ChangeClient<DrainReply>(path, request, timeout, trust);
}

absl::StatusOr<CodeCacheReply> QueryCodeCache(const std::string& path, bool clear,
                                              absl::Duration timeout, const ServerTrust& trust) {
  const ControlRequest request =
      RequestOf(clear ? ControlKind::kClearCodeCache : ControlKind::kCodeCache);
  TALLY_ASSIGN_OR_RETURN(CodeCacheReply reply,
                         ChangeClient<CodeCacheReply>(path, request, timeout, trust));
  Terminate(reply.cache.dir, sizeof(reply.cache.dir));
  return reply;
}

absl::StatusOr<GrantReply> MakeGrant(const std::string& path, const ClientCeiling& terms,
                                     absl::Duration timeout, const ServerTrust& trust) {
  ControlRequest request = RequestOf(ControlKind::kGrant);
  CopyText(terms.grant, request.grant_name, sizeof(request.grant_name));
  request.client_priority_level = terms.max_priority.level();
  request.memory_limit = terms.memory_limit;
  request.pinned_limit = terms.pinned_limit;
  return AskAboutGrant(path, request, timeout, trust);
}

absl::StatusOr<GrantReply> RevokeGrant(const std::string& path, const std::string& name,
                                       bool end_clients, absl::Duration timeout,
                                       const ServerTrust& trust) {
  ControlRequest request = RequestOf(ControlKind::kRevoke);
  CopyText(name, request.grant_name, sizeof(request.grant_name));
  request.end_clients = end_clients ? 1 : 0;
  return AskAboutGrant(path, request, timeout, trust);
}

absl::StatusOr<std::vector<ProfileStatus>> QueryProfiles(const std::string& path,
                                                         absl::Duration timeout,
                                                         const ServerTrust& trust) {
  const absl::Time deadline = absl::Now() + timeout;
  const ControlRequest request = RequestOf(ControlKind::kProfiles);
  UniqueFd socket;
  TALLY_ASSIGN_OR_RETURN(const ProfilesReply reply,
                         Ask<ProfilesReply>(path, request, deadline, trust, socket));
  TALLY_ASSIGN_OR_RETURN(std::vector<ProfileStatus> profiles,
                         ReceiveRecords<ProfileStatus>(socket.get(), reply.count,
                                                       kMaxReportedProfiles, path, deadline));
  for (ProfileStatus& profile : profiles) {
    Terminate(profile.kernel_name, sizeof(profile.kernel_name));
  }
  return profiles;
}

}  // namespace tally::ipc
