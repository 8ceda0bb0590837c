// Kernel attributes and occupancy, for the client's own function handles.
#include <cuda.h>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::StatusOr<Reply<ipc::FuncGetAttributesResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::FuncGetAttributesRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(request.fields.function));
  Reply<ipc::FuncGetAttributesResponse> reply;
  for (size_t i = 0; i < ipc::kFuncAttributeSlots; ++i) {
    int value = 0;
    const CUresult result = session.api().cuFuncGetAttribute(
        &value, static_cast<CUfunction_attribute>(i), entry->kernel->function);
    reply.fields.values[i] = result == CUDA_SUCCESS ? value : 0;
  }
  return reply;
}

absl::StatusOr<Reply<ipc::FuncSetAttributeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::FuncSetAttributeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(request.fields.function));
  // A shared module's function is shared too: a setting one client makes (more dynamic shared
  // memory) is visible to all, which only widens what their launches may ask for.
  TALLY_RETURN_IF_ERROR(CheckCu(
      session.api().cuFuncSetAttribute(entry->kernel->function,
                                       static_cast<CUfunction_attribute>(request.fields.attribute),
                                       request.fields.value),
      "cuFuncSetAttribute"));
  return Reply<ipc::FuncSetAttributeResponse>{};
}

absl::StatusOr<Reply<ipc::OccupancyResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::OccupancyRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(request.fields.function));
  int blocks = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(session.api().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                    &blocks, entry->kernel->function, request.fields.block_size,
                                    request.fields.dynamic_shared_bytes),
                                "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  return Reply<ipc::OccupancyResponse>{{.blocks_per_multiprocessor = blocks}, {}};
}

}  // namespace tally::server
