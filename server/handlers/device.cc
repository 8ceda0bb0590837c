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

}  // namespace tally::server
