// Host functions: queued like other stream work (with the legacy default stream's ordering);
// the client's HostCallbackDone lets the stream go on (see host_callbacks.h).
#include <cuda.h>

#include "common/status.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::Status Handle(Session& session, const ipc::Decoded<ipc::LaunchHostFuncRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(request.fields.stream));
  TALLY_ASSIGN_OR_RETURN(Command command,
                         session.host_callbacks().MakeCommand(session.api(), stream,
                                                              request.fields));
  session.Enqueue(stream, std::move(command));
  return absl::OkStatus();
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::HostCallbackDoneRequest>& request) {
  return session.host_callbacks().Complete(request.fields.gate);
}

}  // namespace tally::server
