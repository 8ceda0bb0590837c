// The server's handler for every call of ipc/cuda_calls.def, one overload per request type,
// defined in the file of its CUDA object family (device.cc, memory.cc, host_memory.cc,
// box_copy.cc, stream.cc, event.cc, module.cc, function.cc, launch.cc). A sync handler returns
// the response or a ClientError; an async one returns OK or a ClientError that the client sees
// at its next synchronising call.
#pragma once

#include <cstddef>
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

#define TALLY_INTERNAL_kSync(name)                   \
  absl::StatusOr<Reply<ipc::name##Response>> Handle( \
      Session& session, const ipc::Decoded<ipc::name##Request>& request);
#define TALLY_INTERNAL_kAsync(name) \
  absl::Status Handle(Session& session, const ipc::Decoded<ipc::name##Request>& request);
#define TALLY_CUDA_CALL(name, id, mode) TALLY_INTERNAL_##mode(name)
#include "ipc/cuda_calls.def"
#undef TALLY_INTERNAL_kSync
#undef TALLY_INTERNAL_kAsync

}  // namespace tally::server
