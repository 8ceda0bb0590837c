// Kernel launches: the client packed the arguments with the layout GetFunction returned; the
// server checks the size and rebuilds cuLaunchKernel's kernelParams (one pointer per parameter,
// CUDA Driver API, cuLaunchKernel) over its own copy of the buffer.
#include <cuda.h>

#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

absl::Status Handle(Session& session, const ipc::Decoded<ipc::LaunchKernelRequest>& request) {
  const ipc::LaunchKernelRequest& r = request.fields;
  TALLY_ASSIGN_OR_RETURN(FunctionEntry * entry, session.functions().Find(r.function));
  const Kernel* kernel = entry->kernel;
  if (request.tail.size() != kernel->signature.param_buffer_size) {
    return ClientError(
        CUDA_ERROR_INVALID_VALUE,
        absl::StrFormat("%d bytes of arguments for %s, which takes %d", request.tail.size(),
                        kernel->signature.name, kernel->signature.param_buffer_size));
  }
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  // Copied out of the ring: the record is released before the launch is issued.
  auto buffer = std::make_shared<std::vector<std::byte>>(request.tail.begin(), request.tail.end());
  const DriverApi* api = &session.api();
  // The command holds the module so that it outlives the launch even if the client goes away.
  session.Enqueue([=, module = entry->module] {
    std::vector<void*> params;
    params.reserve(kernel->signature.params.size());
    for (const ptx::ParamLayout& param : kernel->signature.params) {
      params.push_back(buffer->data() + param.offset);
    }
    return api->cuLaunchKernel(kernel->function, r.grid.x, r.grid.y, r.grid.z, r.block.x, r.block.y,
                               r.block.z, r.shared_bytes, stream, params.data(), nullptr);
  });
  return absl::OkStatus();
}

}  // namespace tally::server
