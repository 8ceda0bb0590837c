// The waiting part of kWait handlers: for the client's issued work, then for streams or an
// event on the device, then for the client's deferred asynchronous error.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

// Waits (on any thread) until the client's work before `ticket` is issued and `streams` have
// completed it; then the deferred error, then a failure of the wait itself.
absl::Status WaitForStreams(Session& session, uint64_t ticket,
                            const std::vector<StreamRef>& streams);
// Whether WaitForStreams would return at once.
bool StreamsIdle(Session& session, uint64_t ticket, const std::vector<StreamRef>& streams);

// A Deferred whose finish is WaitForStreams for everything enqueued so far, then `reply`.
template <typename T>
Deferred<T> AfterStreams(Session& session, std::vector<StreamRef> streams, Reply<T> reply = {}) {
  const uint64_t ticket = session.Ticket();
  Deferred<T> deferred;
  deferred.ready = StreamsIdle(session, ticket, streams);
  deferred.finish = [&session, ticket, streams = std::move(streams),
                     reply = std::move(reply)]() -> absl::StatusOr<Reply<T>> {
    TALLY_RETURN_IF_ERROR(WaitForStreams(session, ticket, streams));
    return reply;
  };
  return deferred;
}

}  // namespace tally::server
