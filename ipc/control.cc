// Both ends of the control connection: the server's answer and the tool's query.
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

// Text fields come from the peer: never trust them to be terminated.
void Terminate(char* field, size_t size) { field[size - 1] = '\0'; }

}  // namespace

void CopyText(const std::string& text, char* field, size_t field_size) {
  const size_t n = std::min(text.size(), field_size - 1);
  std::memcpy(field, text.data(), n);
  std::memset(field + n, 0, field_size - n);
}

absl::Status ControlConnection::SendStatus(StatusReply reply,
                                           std::span<const ClientStatus> clients) {
  reply.prefix = {kControlReplyMagic, kProtocolVersion, sizeof(StatusReply), 0};
  reply.client_count = static_cast<uint32_t>(std::min<size_t>(clients.size(), kMaxReportedClients));
  std::vector<std::byte> bytes;
  bytes.reserve(sizeof(reply) + reply.client_count * sizeof(ClientStatus));
  Append(bytes, reply);
  for (uint32_t i = 0; i < reply.client_count; ++i) Append(bytes, clients[i]);
  const timeval limit{.tv_sec = 1, .tv_usec = 0};
  TALLY_RETURN_IF_ERROR(RetryEintr("setsockopt(SO_SNDTIMEO)", [&] {
                          return setsockopt(socket_.get(), SOL_SOCKET, SO_SNDTIMEO, &limit,
                                            sizeof(limit));
                        }).status());
  return SendAll(socket_.get(), bytes);
}

absl::StatusOr<StatusReport> QueryStatus(const std::string& path, absl::Duration timeout,
                                         uid_t expected_server_uid) {
  TALLY_ASSIGN_OR_RETURN(UniqueFd socket, ConnectUnix(path));
  TALLY_ASSIGN_OR_RETURN(const PeerCredentials server, GetPeerCredentials(socket.get()));
  if (server.uid != expected_server_uid) {
    return absl::PermissionDeniedError(
        absl::StrFormat("the process listening on %s (pid %d) runs as uid %d, not uid %d", path,
                        server.pid, server.uid, expected_server_uid));
  }
  ControlRequest request{};
  request.prefix = {kControlMagic, kProtocolVersion, sizeof(ControlRequest), 0};
  request.kind = static_cast<uint32_t>(ControlKind::kStatus);
  const absl::Status sent = SendAll(socket.get(), BytesOf(request));
  const absl::Time deadline = absl::Now() + timeout;
  StatusReport report{};
  HandshakePrefix& prefix = report.server.prefix;
  if (const absl::Status received = ReceiveExact(socket.get(), BytesOf(prefix), deadline);
      !received.ok()) {
    return sent.ok() ? received : sent;
  }
  if (prefix.magic == kReplyMagic) {  // a HelloReply: the server refused us before reading
    return absl::PermissionDeniedError(absl::StrFormat(
        "the Tally server on %s refused us: it serves another user (we are uid %d)", path,
        geteuid()));
  }
  if (prefix.magic != kControlReplyMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s answered with something that is not a Tally status", path));
  }
  if (prefix.protocol_version != kProtocolVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the Tally server on %s speaks IPC protocol version %d but this tool speaks version %d; "
        "use the tally-ctl of the server's build",
        path, prefix.protocol_version, kProtocolVersion));
  }
  if (prefix.size != sizeof(StatusReply)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the server on %s sent a %d-byte status, expected %d", path, prefix.size,
        sizeof(StatusReply)));
  }
  TALLY_RETURN_IF_ERROR(ReceiveExact(
      socket.get(), BytesAfterPrefix(report.server), deadline));
  if (report.server.client_count > kMaxReportedClients) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the server on %s reports %d clients, more than the %d allowed", path,
        report.server.client_count, kMaxReportedClients));
  }
  Terminate(report.server.device_name, sizeof(report.server.device_name));
  Terminate(report.server.backend_description, sizeof(report.server.backend_description));
  report.clients.resize(report.server.client_count);
  for (ClientStatus& client : report.clients) {
    TALLY_RETURN_IF_ERROR(ReceiveExact(socket.get(), BytesOf(client), deadline));
    Terminate(client.command, sizeof(client.command));
  }
  return report;
}

}  // namespace tally::ipc
