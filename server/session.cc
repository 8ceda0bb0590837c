// Session set-up and the cleanup that runs when a client disconnects or dies.
#include "server/session.h"

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {

Session::Session(ServerContext& server, const ipc::ClientInfo& client, ipc::BulkArea bulk)
    : server_(server),
      client_(client),
      bulk_(bulk),
      queue_(server.dispatcher.AddClient(client.client_id, client.priority)) {}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(ServerContext& server,
                                                         const ipc::ClientInfo& client,
                                                         ipc::BulkArea bulk) {
  std::unique_ptr<Session> session(new Session(server, client, bulk));
  // Non-blocking: the legacy NULL stream would serialise this client with every other client's
  // streams in the shared context (CUDA Runtime API, "Stream synchronization behavior").
  TALLY_RETURN_IF_ERROR(CheckCu(server.backend.api().cuStreamCreateWithPriority(
                                    &session->default_stream_, CU_STREAM_NON_BLOCKING, 0),
                                "cuStreamCreateWithPriority"));
  return session;
}

Session::~Session() {
  server_.dispatcher.RemoveClient(*queue_);
  const DriverApi& api = this->api();
  const size_t streams = streams_.size();
  streams_.Clear([&](CUstream stream) {
    api.cuStreamSynchronize(stream);
    api.cuStreamDestroy(stream);
  });
  if (default_stream_ != nullptr) {
    api.cuStreamSynchronize(default_stream_);
    api.cuStreamDestroy(default_stream_);
  }
  const size_t events = events_.size();
  events_.Clear([&](CUevent event) { api.cuEventDestroy(event); });
  const size_t allocations = allocations_.count();
  const uint64_t bytes = allocations_.total_bytes();
  for (const auto& [base, size] : allocations_.allocations()) api.cuMemFree(base);
  functions_.Clear([](FunctionEntry&) {});
  modules_.Clear([](std::shared_ptr<SharedModule>&) {});
  TALLY_LOG_INFO(
      "client {} (pid {}) gone: freed {} allocation(s) of {} bytes, {} stream(s), {} event(s)",
      client_.client_id, client_.pid, allocations, bytes, streams, events);
}

absl::StatusOr<CUstream> Session::FindStream(uint64_t handle) {
  if (handle == 0) return default_stream_;
  TALLY_ASSIGN_OR_RETURN(CUstream * stream, streams_.Find(handle));
  return *stream;
}

absl::StatusOr<std::span<std::byte>> Session::ResolveBulk(const ipc::BulkRef& ref) const {
  absl::StatusOr<std::span<std::byte>> bytes = bulk_.Resolve(ref);
  if (!bytes.ok()) return ClientError(CUDA_ERROR_INVALID_VALUE, bytes.status().message());
  return bytes;
}

absl::Status Session::TakeDeferredError() {
  const CUresult result = server_.dispatcher.TakeDeferredError(*queue_);
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return ClientError(result, absl::StrFormat("asynchronous work failed with CUresult %d",
                                             static_cast<int>(result)));
}

}  // namespace tally::server
