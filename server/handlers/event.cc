// Events. Records are queued like other stream work, so they mark the point after everything
// the client enqueued before them.
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::EventCreateResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::EventCreateRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.CheckCount(
      session.events().size(), session.client_limits().max_events, "event", "--max-events"));
  // cudaEventDefault/BlockingSync/DisableTiming/Interprocess equal the CU_EVENT_* flags.
  CUevent event = nullptr;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuEventCreate(&event, request.fields.flags), "cuEventCreate"));
  const uint64_t handle = session.events().Insert(std::make_shared<EventEntry>(session.api(), event));
  return Reply<ipc::EventCreateResponse>{{.event = handle}, {}};
}

absl::StatusOr<Reply<ipc::EventDestroyResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::EventDestroyRequest>& request) {
  session.Flush();
  // Destroyed here unless a waiter still holds it.
  TALLY_RETURN_IF_ERROR(session.events().Remove(request.fields.event).status());
  return Reply<ipc::EventDestroyResponse>{};
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::EventRecordRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(EventRef * event, session.events().Find(request.fields.event));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(request.fields.stream));
  const DriverApi* api = &session.api();
  const CUevent recorded = (*event)->event;
  session.Enqueue(stream, [=] { return api->cuEventRecord(recorded, stream); });
  (*event)->recorded_at = session.enqueued();
  return absl::OkStatus();
}

absl::StatusOr<Deferred<ipc::EventSynchronizeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::EventSynchronizeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(EventRef * found, session.events().Find(request.fields.event));
  const uint64_t ticket = session.Ticket();
  const EventRef event = *found;
  const DriverApi& api = session.api();
  return Deferred<ipc::EventSynchronizeResponse>{
      .finish = [&session, &api, ticket,
                 event]() -> absl::StatusOr<Reply<ipc::EventSynchronizeResponse>> {
        session.WaitIssued(ticket);
        const CUresult synced = api.cuEventSynchronize(event->event);
        TALLY_RETURN_IF_ERROR(session.TakeDeferredError());
        TALLY_RETURN_IF_ERROR(CheckCu(synced, "cuEventSynchronize"));
        return Reply<ipc::EventSynchronizeResponse>{};
      },
      .ready = session.Issued(ticket) && api.cuEventQuery(event->event) == CUDA_SUCCESS};
}

absl::StatusOr<Reply<ipc::EventQueryResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::EventQueryRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(EventRef * event, session.events().Find(request.fields.event));
  // A record still in the client's queue has not happened; other work queued after it (other
  // threads') does not concern the event. A query never blocks.
  if (!session.WorkIssued((*event)->recorded_at)) {
    return ClientError(CUDA_ERROR_NOT_READY, "its record is queued");
  }
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuEventQuery((*event)->event), "cuEventQuery"));
  return Reply<ipc::EventQueryResponse>{};
}

absl::StatusOr<Reply<ipc::EventElapsedTimeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::EventElapsedTimeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(EventRef * start, session.events().Find(request.fields.start));
  TALLY_ASSIGN_OR_RETURN(EventRef * end, session.events().Find(request.fields.end));
  session.Flush();  // the records must have reached the device
  float milliseconds = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(
      session.api().cuEventElapsedTime(&milliseconds, (*start)->event, (*end)->event),
      "cuEventElapsedTime"));
  return Reply<ipc::EventElapsedTimeResponse>{{.milliseconds = milliseconds}, {}};
}

}  // namespace tally::server
