// Device-wide calls: the properties snapshot, device synchronisation and reset, memory
// information, limits.
#include <cuda.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/waiting.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::GetDeviceInfoResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::GetDeviceInfoRequest>&) {
  Reply<ipc::GetDeviceInfoResponse> reply{session.server().device_info, {}};
  // A client with a memory limit sees a device of that size (cudaGetDeviceProperties).
  reply.fields.total_memory = session.VisibleTotalMemory();
  return reply;
}

// cudaDeviceSynchronize waits for all of the calling client's work, not other clients': each
// client sees a device of its own (CUDA Runtime API, cudaDeviceSynchronize).
absl::StatusOr<Deferred<ipc::DeviceSynchronizeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceSynchronizeRequest>&) {
  return AfterStreams<ipc::DeviceSynchronizeResponse>(session, session.HoldAllStreams());
}

// cudaDeviceReset "destroys and cleans up all resources associated with the current device in
// the current process" (CUDA Runtime API): for a client, its device: its work finishes, then its
// streams, events, memory and page-locked blocks are destroyed, its limits forgotten and errors
// of its earlier asynchronous work cleared. Its default stream stays, and so do its modules:
// CUDA's runtime reloads registered modules after a reset, so their kernels stay launchable and
// their variables have their initial values again.
absl::StatusOr<Deferred<ipc::DeviceResetResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceResetRequest>&) {
  std::vector<StreamRef> streams = session.HoldAllStreams();
  TALLY_ASSIGN_OR_RETURN(CUstream default_stream, session.FindStream(0));
  std::vector<std::shared_ptr<SharedModule>> modules;
  session.modules().ForEach([&](const std::shared_ptr<SharedModule>& m) { modules.push_back(m); });
  const uint64_t ticket = session.Ticket();
  auto owned = std::make_shared<OwnedResources>(session.TakeOwned());
  session.limits().clear();
  Deferred<ipc::DeviceResetResponse> deferred;
  deferred.finish = [&session, ticket, streams = std::move(streams), owned, default_stream,
                     modules = std::move(modules)]()
      -> absl::StatusOr<Reply<ipc::DeviceResetResponse>> {
    // The failure of earlier work is not reported: the reset discards it with the work.
    // Transformed kernels count as issued once they finished, so this waits for them too.
    WaitForStreams(session, ticket, streams).IgnoreError();
    owned->Release(session.api());
    for (const std::shared_ptr<SharedModule>& module : modules) {
      TALLY_RETURN_IF_ERROR(module->ResetVariables(default_stream));
    }
    return Reply<ipc::DeviceResetResponse>{};
  };
  return deferred;
}

absl::StatusOr<Reply<ipc::MemGetInfoResponse>> Handle(Session& session,
                                                      const ipc::Decoded<ipc::MemGetInfoRequest>&) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo"));
  // Within its limit a client sees a smaller device: its limit is the total, what it has not
  // allocated of it (or less, when the device itself has less free) is free.
  const uint64_t limit = session.memory_limit();
  const uint64_t used = session.allocations().total_bytes();
  const uint64_t left = used < limit ? limit - used : 0;
  return Reply<ipc::MemGetInfoResponse>{
      {.free_bytes = std::min<uint64_t>(free_bytes, left),
       .total_bytes = std::min<uint64_t>(total_bytes, limit)},
      {}};
}

// The context is shared by all clients: a limit is only ever raised in it (more stack or heap for
// one client takes nothing from the others), while each client reads back the value it set, as
// far as the driver took it (it may clamp a value, or refuse it: NVIDIA's driver refuses a
// CU_LIMIT_PERSISTING_L2_CACHE_SIZE above the device's maximum).
absl::StatusOr<Reply<ipc::DeviceSetLimitResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceSetLimitRequest>& request) {
  const auto limit = static_cast<CUlimit>(request.fields.limit);
  size_t current = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuCtxGetLimit(&current, limit), "cuCtxGetLimit"));
  size_t value = request.fields.value;
  if (value > current) {
    TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuCtxSetLimit(limit, value), "cuCtxSetLimit"));
    TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuCtxGetLimit(&current, limit), "cuCtxGetLimit"));
    value = std::min(value, current);
  }
  session.limits()[request.fields.limit] = value;
  return Reply<ipc::DeviceSetLimitResponse>{};
}

absl::StatusOr<Reply<ipc::DeviceGetLimitResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::DeviceGetLimitRequest>& request) {
  size_t current = 0;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuCtxGetLimit(&current, static_cast<CUlimit>(request.fields.limit)),
              "cuCtxGetLimit"));
  auto set = session.limits().find(request.fields.limit);
  return Reply<ipc::DeviceGetLimitResponse>{
      {.value = set != session.limits().end() ? set->second : current}, {}};
}

// What a synchronising call's answer flagged (ipc::kFlagDeviceOutput): the held text, oldest
// first, as much as one response carries.
absl::StatusOr<Reply<ipc::TakeDeviceOutputResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::TakeDeviceOutputRequest>&) {
  Reply<ipc::TakeDeviceOutputResponse> reply;
  reply.fields.more = session.device_output().output->Take(reply.tail) ? 1 : 0;
  return reply;
}

}  // namespace tally::server
