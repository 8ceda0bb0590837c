// Page-locked host memory: blocks of the client's host region that the client allocated and the
// server registers with the device (Session::AddHostBlock), so that kernels, copies and the
// application all use them at one address.
#include "server/handlers/handlers.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::HostAllocResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::HostAllocRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.AddHostBlock(request.fields.address, request.fields.size));
  return Reply<ipc::HostAllocResponse>{};
}

absl::StatusOr<Reply<ipc::HostFreeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::HostFreeRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.RemoveHostBlock(request.fields.address));
  return Reply<ipc::HostFreeResponse>{};
}

}  // namespace tally::server
