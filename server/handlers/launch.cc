// Kernel launches: the client packed the arguments with the layout GetFunction returned; the
// server checks the size, keeps its own copy of the buffer and queues the launch, counting the
// library call it begins (ipc/library_calls.h). The dispatcher issues it when and in the form
// the scheduling policy picks (server/dispatcher.h).
#include <cuda.h>

#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/library_calls.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::Status Handle(Session& session, const ipc::Decoded<ipc::LaunchKernelRequest>& request) {
  const ipc::LaunchKernelRequest& r = request.fields;
  const std::optional<ipc::Library> library = ipc::LibraryFromWire(r.library_call);
  if (!library) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("library_call %d names no library", r.library_call));
  }
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(r.function));
  const Kernel* kernel = entry->kernel;
  if (request.tail.size() != kernel->signature.param_buffer_size) {
    return ClientError(
        CUDA_ERROR_INVALID_VALUE,
        absl::StrFormat("%d bytes of arguments for %s, which takes %d", request.tail.size(),
                        kernel->signature.name, kernel->signature.param_buffer_size));
  }
  // Cluster dimensions: none (all 0) or all given; the driver checks their sizes.
  const bool some_cluster = r.cluster.x != 0 || r.cluster.y != 0 || r.cluster.z != 0;
  if (some_cluster && (r.cluster.x == 0 || r.cluster.y == 0 || r.cluster.z == 0)) {
    return ClientError(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                       absl::StrFormat("cluster %dx%dx%d has a zero dimension", r.cluster.x,
                                       r.cluster.y, r.cluster.z));
  }
  // Copied out of the ring: the record is released before the launch is issued. The launch
  // holds the module so that it outlives the launch even if the client goes away. It lives in
  // the command itself: one allocation per launch (two with arguments), not one per object.
  KernelLaunch launch;
  TALLY_ASSIGN_OR_RETURN(StreamEntry * stream, session.EntryForWork(r.stream));
  launch.stream = stream->stream;
  launch.gate_word = stream->gate.word;
  launch.gate_generation = stream->gate.generation;
  launch.module = entry->module;
  launch.kernel = kernel;
  launch.params.assign(request.tail.begin(), request.tail.end());
  launch.grid = {r.grid.x, r.grid.y, r.grid.z};
  launch.block = {r.block.x, r.block.y, r.block.z};
  launch.shared_bytes = r.shared_bytes;
  launch.cooperative = (r.flags & ipc::kLaunchCooperative) != 0;
  launch.cluster = {r.cluster.x, r.cluster.y, r.cluster.z};
  TALLY_RETURN_IF_ERROR(session.Fence(launch));
  // Queued at once: the dispatcher has its transformed forms made if the policy shapes the
  // client's kernels (and holds it while they are made).
  session.EnqueueKernel(std::move(launch));
  session.CountLibraryCall(*library);
  return absl::OkStatus();
}

}  // namespace tally::server
