// Device-wide calls: the properties snapshot, device synchronisation, memory information.
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/waiting.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::GetDeviceInfoResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::GetDeviceInfoRequest>&) {
  return Reply<ipc::GetDeviceInfoResponse>{session.server().device_info, {}};
}

// cudaDeviceSynchronize waits for all of the calling client's work, not other clients': each
// client sees a device of its own (CUDA Runtime API, cudaDeviceSynchronize).
absl::StatusOr<Deferred<ipc::DeviceSynchronizeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceSynchronizeRequest>&) {
  return AfterStreams<ipc::DeviceSynchronizeResponse>(session, session.HoldAllStreams());
}

absl::StatusOr<Reply<ipc::MemGetInfoResponse>> Handle(Session& session,
                                                      const ipc::Decoded<ipc::MemGetInfoRequest>&) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo"));
  return Reply<ipc::MemGetInfoResponse>{{.free_bytes = free_bytes, .total_bytes = total_bytes}, {}};
}

// The context is shared by all clients: a limit is only ever raised in it (more stack or heap for
// one client takes nothing from the others), while each client reads back the value it set.
absl::StatusOr<Reply<ipc::DeviceSetLimitResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceSetLimitRequest>& request) {
  const auto limit = static_cast<CUlimit>(request.fields.limit);
  size_t current = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuCtxGetLimit(&current, limit), "cuCtxGetLimit"));
  if (request.fields.value > current) {
    TALLY_RETURN_IF_ERROR(
        CheckCu(session.api().cuCtxSetLimit(limit, request.fields.value), "cuCtxSetLimit"));
  }
  session.limits()[request.fields.limit] = request.fields.value;
  return Reply<ipc::DeviceSetLimitResponse>{};
}

absl::StatusOr<Reply<ipc::DeviceGetLimitResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceGetLimitRequest>& request) {
  size_t current = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(
      session.api().cuCtxGetLimit(&current, static_cast<CUlimit>(request.fields.limit)),
      "cuCtxGetLimit"));
  auto set = session.limits().find(request.fields.limit);
  return Reply<ipc::DeviceGetLimitResponse>{
      {.value = set != session.limits().end() ? set->second : current}, {}};
}

}  // namespace tally::server
