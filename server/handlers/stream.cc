// Streams, kept by the session (see Session::StreamForWork for the legacy default stream's
// ordering, which each client gets for its own streams only).
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/waiting.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::StreamCreateResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamCreateRequest>& request) {
  // cudaStreamNonBlocking (driver_types.h) opts out of the legacy default stream's ordering.
  constexpr uint32_t kNonBlocking = 0x1;
  const bool blocking = (request.fields.flags & kNonBlocking) == 0;
  TALLY_ASSIGN_OR_RETURN(const uint64_t stream,
                         session.CreateStream(blocking, request.fields.stream_priority));
  return Reply<ipc::StreamCreateResponse>{{.stream = stream}, {}};
}

absl::StatusOr<Reply<ipc::StreamDestroyResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamDestroyRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.DestroyStream(request.fields.stream));
  return Reply<ipc::StreamDestroyResponse>{};
}

absl::StatusOr<Deferred<ipc::StreamSynchronizeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamSynchronizeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(StreamRef stream, session.HoldStream(request.fields.stream));
  return AfterStreams<ipc::StreamSynchronizeResponse>(session, {std::move(stream)});
}

absl::StatusOr<Reply<ipc::StreamQueryResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamQueryRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(StreamRef stream, session.HoldStream(request.fields.stream));
  // The stream's own work still in the client's queue is not done either; the work of the
  // client's other streams (other threads') does not concern it. A query never blocks.
  if (!session.WorkIssued(stream->last_work)) {
    return ClientError(CUDA_ERROR_NOT_READY, "work is queued");
  }
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuStreamQuery(stream->stream), "cuStreamQuery"));
  return Reply<ipc::StreamQueryResponse>{};
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::StreamWaitEventRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(EventRef * event, session.events().Find(request.fields.event));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(request.fields.stream));
  const DriverApi* api = &session.api();
  const CUevent waited = (*event)->event;
  const unsigned flags = request.fields.flags;
  session.Enqueue(stream, [=] { return api->cuStreamWaitEvent(stream, waited, flags); });
  return absl::OkStatus();
}

}  // namespace tally::server
