// Page-locked host memory: blocks of the client's host region that the client allocated and the
// server registers with the device (Session::AddHostBlock), so that kernels, copies and the
// application all use them at one address.
#include "server/handlers/handlers.h"
#include "server/handlers/waiting.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::HostAllocResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::HostAllocRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.AddHostBlock(request.fields.address, request.fields.size));
  return Reply<ipc::HostAllocResponse>{};
}

// cudaFreeHost waits for the client's work (which may still use the block) on a waiter thread;
// the block leaves the client's table at once.
absl::StatusOr<Deferred<ipc::HostFreeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::HostFreeRequest>& request) {
  const uint64_t address = request.fields.address;
  TALLY_RETURN_IF_ERROR(session.RemoveHostBlock(address));
  const uint64_t ticket = session.Ticket();
  Deferred<ipc::HostFreeResponse> deferred;
  deferred.finish = [&session, ticket, streams = session.HoldAllStreams(),
                     address]() -> absl::StatusOr<Reply<ipc::HostFreeResponse>> {
    const absl::Status waited = WaitForStreams(session, ticket, streams);
    TALLY_RETURN_IF_ERROR(CheckCu(
        session.api().cuMemHostUnregister(reinterpret_cast<void*>(address)), "cuMemHostUnregister"));
    TALLY_RETURN_IF_ERROR(waited);
    return Reply<ipc::HostFreeResponse>{};
  };
  return deferred;
}

}  // namespace tally::server
