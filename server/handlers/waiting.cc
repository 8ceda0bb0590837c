// Waiting for streams, shared by the synchronising calls and the copies with host memory.
#include "server/handlers/waiting.h"

#include "common/status.h"

namespace tally::server {

absl::Status WaitForStreams(Session& session, uint64_t ticket,
                            const std::vector<StreamRef>& streams) {
  session.WaitIssued(ticket);
  CUresult result = CUDA_SUCCESS;
  for (const StreamRef& stream : streams) {
    const CUresult synced = session.api().cuStreamSynchronize(stream->stream);
    if (result == CUDA_SUCCESS) result = synced;
  }
  TALLY_RETURN_IF_ERROR(session.TakeDeferredError());
  return CheckCu(result, "cuStreamSynchronize");
}

bool StreamsIdle(Session& session, uint64_t ticket, const std::vector<StreamRef>& streams) {
  if (!session.Issued(ticket)) return false;
  for (const StreamRef& stream : streams) {
    if (session.api().cuStreamQuery(stream->stream) != CUDA_SUCCESS) return false;
  }
  return true;
}

}  // namespace tally::server
