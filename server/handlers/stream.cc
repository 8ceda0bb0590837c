// Streams. Every client stream is created non-blocking on the backend so that it never
// synchronises with other clients' work through the shared context's legacy NULL stream (CUDA
// Runtime API, "Stream synchronization behavior"); a client's own ordering comes from its queue.
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::StreamCreateResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamCreateRequest>& request) {
  CUstream stream = nullptr;
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuStreamCreateWithPriority(
                                    &stream, CU_STREAM_NON_BLOCKING, request.fields.priority),
                                "cuStreamCreateWithPriority"));
  return Reply<ipc::StreamCreateResponse>{{.stream = session.streams().Insert(stream)}, {}};
}

absl::StatusOr<Reply<ipc::StreamDestroyResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamDestroyRequest>& request) {
  session.Flush();
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.streams().Remove(request.fields.stream));
  // Work already on the stream still completes (CUDA Runtime API, cudaStreamDestroy).
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuStreamDestroy(stream), "cuStreamDestroy"));
  return Reply<ipc::StreamDestroyResponse>{};
}

absl::StatusOr<Reply<ipc::StreamSynchronizeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamSynchronizeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.FindStream(request.fields.stream));
  session.Flush();
  const CUresult synced = session.api().cuStreamSynchronize(stream);
  TALLY_RETURN_IF_ERROR(session.TakeDeferredError());
  TALLY_RETURN_IF_ERROR(CheckCu(synced, "cuStreamSynchronize"));
  return Reply<ipc::StreamSynchronizeResponse>{};
}

absl::StatusOr<Reply<ipc::StreamQueryResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::StreamQueryRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.FindStream(request.fields.stream));
  // Work still in the client's queue is not done either; a query never blocks.
  if (session.queued() > 0) {
    return ClientError(CUDA_ERROR_NOT_READY, "work is queued");
  }
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuStreamQuery(stream), "cuStreamQuery"));
  return Reply<ipc::StreamQueryResponse>{};
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::StreamWaitEventRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.FindStream(request.fields.stream));
  TALLY_ASSIGN_OR_RETURN(CUevent * event, session.events().Find(request.fields.event));
  const DriverApi* api = &session.api();
  const CUevent waited = *event;
  const unsigned flags = request.fields.flags;
  session.Enqueue([=] { return api->cuStreamWaitEvent(stream, waited, flags); });
  return absl::OkStatus();
}

}  // namespace tally::server
