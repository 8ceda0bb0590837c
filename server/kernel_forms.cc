// Issuing the forms of a kernel launch. The original arguments are the client's parameter
// buffer; the variants' buffers are packed by ptx_transform/launch_forms.h.
#include "server/kernel_forms.h"

#include "absl/strings/str_format.h"

namespace tally::server {

std::vector<const void*> ArgumentPointers(const KernelLaunch& launch) {
  std::vector<const void*> args;
  args.reserve(launch.kernel->signature.params.size() + 1);
  for (const ptx::ParamLayout& param : launch.kernel->signature.params) {
    args.push_back(launch.params.data() + param.offset);
  }
  if (launch.fence) args.push_back(&*launch.fence);
  return args;
}

std::string DescribeLaunch(const KernelLaunch& launch) {
  if (launch.vendor) return launch.vendor->name;
  return absl::StrFormat("kernel %s<<<(%d,%d,%d), (%d,%d,%d), %d>>>",
                         launch.kernel->signature.name, launch.grid.x, launch.grid.y,
                         launch.grid.z, launch.block.x, launch.block.y, launch.block.z,
                         launch.shared_bytes);
}

const std::string& LaunchName(const KernelLaunch& launch) {
  return launch.vendor ? launch.vendor->name : launch.kernel->signature.name;
}

CUresult LaunchOriginal(const DriverApi& api, const KernelLaunch& launch) {
  if (launch.vendor) return launch.vendor->issue(launch.stream);
  // cuLaunchKernel copies the arguments, so pointers into the launch's buffer suffice.
  std::vector<const void*> args = ArgumentPointers(launch);
  void** params = const_cast<void**>(args.data());
  if (launch.Clustered()) {
    CUlaunchAttribute attributes[2] = {};
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = launch.cluster.x;
    attributes[0].value.clusterDim.y = launch.cluster.y;
    attributes[0].value.clusterDim.z = launch.cluster.z;
    attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[1].value.cooperative = launch.cooperative ? 1 : 0;
    CUlaunchConfig config = {};
    config.gridDimX = launch.grid.x;
    config.gridDimY = launch.grid.y;
    config.gridDimZ = launch.grid.z;
    config.blockDimX = launch.block.x;
    config.blockDimY = launch.block.y;
    config.blockDimZ = launch.block.z;
    config.sharedMemBytes = launch.shared_bytes;
    config.hStream = launch.stream;
    config.attrs = attributes;
    config.numAttrs = 2;
    return api.cuLaunchKernelEx(&config, launch.kernel->function, params, nullptr);
  }
  if (launch.cooperative) {
    return api.cuLaunchCooperativeKernel(launch.kernel->function, launch.grid.x, launch.grid.y,
                                         launch.grid.z, launch.block.x, launch.block.y,
                                         launch.block.z, launch.shared_bytes, launch.stream,
                                         params);
  }
  return api.cuLaunchKernel(launch.kernel->function, launch.grid.x, launch.grid.y, launch.grid.z,
                            launch.block.x, launch.block.y, launch.block.z, launch.shared_bytes,
                            launch.stream, params, nullptr);
}

CUresult LaunchVariant(const DriverApi& api, const KernelLaunch& launch, CUfunction function,
                       ptx::Dim3 grid, std::vector<uint8_t>& params) {
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return api.cuLaunchKernel(function, grid.x, grid.y, grid.z, launch.block.x, launch.block.y,
                            launch.block.z, launch.shared_bytes, launch.stream, nullptr, extra);
}

}  // namespace tally::server
