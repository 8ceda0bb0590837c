// The server's handler for every call of ipc/cuda_calls.def, one overload per request type,
// defined in the file of its CUDA object family (device.cc, memory.cc, host_memory.cc,
// box_copy.cc, stream.cc, event.cc, module.cc, function.cc, launch.cc). A sync handler returns
// the response or a ClientError; a wait handler (kWait) checks the request on the session thread
// and returns how to finish it; an async one returns OK or a ClientError that the client sees at
// its next synchronising call.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"
#include "server/session.h"

namespace tally::server {

template <typename T>
struct Reply {
  T fields{};
  std::vector<std::byte> tail;  // for responses with kHasTail
};

// The answer to a kWait call: `finish` may block on the device, so it runs on one of the
// session's waiter threads, which lets the session thread serve the client's other threads
// meanwhile; when `ready` (it would not block) it runs on the session thread. `finish` must not
// touch the session's tables, which the session thread owns: it captures what it needs (a
// StreamRef keeps a stream alive). Session's Ticket/WaitIssued/TakeDeferredError and api() are
// safe from any thread.
template <typename T>
struct Deferred {
  std::function<absl::StatusOr<Reply<T>>()> finish;
  bool ready = false;
};

#define TALLY_INTERNAL_kSync(name)                   \
  absl::StatusOr<Reply<ipc::name##Response>> Handle( \
      Session& session, const ipc::Decoded<ipc::name##Request>& request);
#define TALLY_INTERNAL_kWait(name)                      \
  absl::StatusOr<Deferred<ipc::name##Response>> Handle( \
      Session& session, const ipc::Decoded<ipc::name##Request>& request);
#define TALLY_INTERNAL_kAsync(name) \
  absl::Status Handle(Session& session, const ipc::Decoded<ipc::name##Request>& request);
#define TALLY_CUDA_CALL(name, id, mode) TALLY_INTERNAL_##mode(name)
#include "ipc/cuda_calls.def"
#undef TALLY_INTERNAL_kSync
#undef TALLY_INTERNAL_kWait
#undef TALLY_INTERNAL_kAsync

}  // namespace tally::server
