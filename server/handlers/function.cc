// Kernel attributes and occupancy, for the client's own function handles.
#include <cuda.h>

#include <optional>

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
  const auto attribute = static_cast<CUfunction_attribute>(request.fields.attribute);
  const Kernel& kernel = *entry->kernel;
  TALLY_RETURN_IF_ERROR(
      CheckCu(session.api().cuFuncSetAttribute(kernel.function, attribute, request.fields.value),
              "cuFuncSetAttribute"));
  // Every form of the kernel gets the setting, now or when its forms are made.
  entry->module->SetAttribute(kernel, attribute, request.fields.value);
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

// The grid is one cluster: cuOccupancyMaxActiveClusters has no grid of its own to ask about.
absl::StatusOr<Reply<ipc::OccupancyClustersResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::OccupancyClustersRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(request.fields.function));
  const ipc::Dim3 block = request.fields.block;
  const ipc::Dim3 cluster = request.fields.cluster;
  const bool given = cluster.x != 0 || cluster.y != 0 || cluster.z != 0;
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim = {cluster.x, cluster.y, cluster.z};
  CUlaunchConfig config{};
  config.gridDimX = given ? cluster.x : 1;
  config.gridDimY = given ? cluster.y : 1;
  config.gridDimZ = given ? cluster.z : 1;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = static_cast<unsigned int>(request.fields.dynamic_shared_bytes);
  config.attrs = given ? &attribute : nullptr;
  config.numAttrs = given ? 1 : 0;
  int clusters = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(
      session.api().cuOccupancyMaxActiveClusters(&clusters, entry->kernel->function, &config),
      "cuOccupancyMaxActiveClusters"));
  return Reply<ipc::OccupancyClustersResponse>{{.clusters = clusters}, {}};
}

}  // namespace tally::server
