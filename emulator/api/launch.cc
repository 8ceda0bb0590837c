// Exports cuLaunchKernel, cuLaunchCooperativeKernel, cuLaunchKernelEx and
// cuOccupancyMaxActiveBlocksPerMultiprocessor. A launch is checked and its parameters copied at
// the call (as CUDA does); in stream order, the stream's thread then hands the grid to the
// device-wide block dispatcher (exec/sm_pool.h) and waits for it; a fault becomes the sticky
// error of the stream's tenant (cuda_abi/driver_extensions.h), or of the context when it has none.
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/log.h"
#include "emulator/exec/occupancy.h"
#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Kernel;
using tally::emu::Run;

namespace tally::emu {
namespace {

constexpr uint32_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;
constexpr uint32_t kMaxBlockXY = 1024, kMaxBlockZ = 64, kMaxThreads = 1024;

// The parameter buffer from kernelParams (one pointer per parameter) or from `extra`
// (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE, CUDA driver API "cuLaunchKernel").
absl::StatusOr<std::vector<uint8_t>> PackParams(const exec::Function& f, void** kernel_params,
                                                void** extra) {
  std::vector<uint8_t> buffer(f.param_bytes, 0);
  if (kernel_params != nullptr && extra != nullptr) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "both kernelParams and extra given");
  }
  if (kernel_params != nullptr) {
    for (size_t i = 0; i < f.param_layout.size(); ++i) {
      const auto& [offset, size] = f.param_layout[i];
      if (kernel_params[i] == nullptr) {
        return CudaError(CUDA_ERROR_INVALID_VALUE, "null kernel parameter pointer");
      }
      std::memcpy(buffer.data() + offset, kernel_params[i], size);
    }
    return buffer;
  }
  if (extra == nullptr) {
    if (f.param_bytes == 0) return buffer;
    return CudaError(CUDA_ERROR_INVALID_VALUE, "the kernel takes parameters but none were given");
  }
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      pointer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown entry in extra");
    }
  }
  if (pointer == nullptr || size == nullptr || *size < f.param_bytes) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "extra lacks a large enough parameter buffer");
  }
  std::memcpy(buffer.data(), pointer, f.param_bytes);
  return buffer;
}

absl::Status CheckShape(const Kernel& kernel, exec::Dim3 grid, exec::Dim3 block,
                        uint32_t dynamic_shared) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > kMaxGridX || grid.y > kMaxGridYZ ||
      grid.z > kMaxGridYZ) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "grid dimensions out of range");
  }
  if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > kMaxBlockXY ||
      block.y > kMaxBlockXY || block.z > kMaxBlockZ ||
      block.Count() > std::min(kMaxThreads, kernel.function->max_threads)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "block dimensions out of range");
  }
  uint32_t limit =
      std::max<uint32_t>(exec::kDefaultSharedPerBlock - kernel.function->static_shared_bytes,
                         static_cast<uint32_t>(kernel.max_dynamic_shared.load()));
  if (dynamic_shared > limit) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "too much dynamic shared memory");
  }
  // Shared addresses of other CTAs of a cluster carry the CTA above these bits (program.h).
  if (uint64_t{kernel.function->static_shared_bytes} + dynamic_shared > exec::kClusterOffsetMask) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "more shared memory than a block can have");
  }
  return absl::OkStatus();
}

// Occupancy by the SM limits that block dispatch applies (exec/occupancy.h).
int MaxActiveBlocksPerSm(const Kernel& kernel, uint32_t block_threads, uint64_t dynamic_shared) {
  if (block_threads > kernel.function->max_threads) return 0;
  return static_cast<int>(exec::BlocksPerSm(
      exec::FootprintOf(block_threads, kernel.function->static_shared_bytes + dynamic_shared)));
}

// The grid workspace a cooperative launch passes to its kernel in %envreg1:%envreg2
// (cooperative_groups/details/driver_abi.h: {unsigned wsSize; unsigned barrier;}); grid.sync()
// counts arrivals in `barrier`, and a zero address makes it trap as for a normal launch.
absl::StatusOr<uint64_t> NewGridWorkspace(Driver& driver, const Context& context) {
  struct GridWorkspace {
    uint32_t size, barrier;
  };
  TALLY_ASSIGN_OR_RETURN(
      uint64_t address,
      driver.memory().Allocate(sizeof(GridWorkspace), AllocationKind::kDevice, context.id()));
  *reinterpret_cast<GridWorkspace*>(address) = {sizeof(GridWorkspace), 0};
  return address;
}

struct LaunchRequest {
  CUfunction function;
  exec::Dim3 grid, block;
  uint32_t dynamic_shared;
  CUstream stream;
  void** kernel_params;
  void** extra;
  bool cooperative;
  std::optional<exec::Dim3> cluster = std::nullopt;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
  std::optional<int> priority = std::nullopt;        // CU_LAUNCH_ATTRIBUTE_PRIORITY
};

constexpr uint32_t kPortableClusterSize = 8, kNonPortableClusterSize = 16;

// The launch's cluster shape (CUDA C++ Programming Guide, "Thread Block Clusters"): the kernel's
// compile-time .reqnctapercluster, or the launch attribute's, or implicit one-CTA clusters; it
// must divide the grid and stay within the portable size of 8 CTAs (16 when the kernel allows
// non-portable sizes) and the kernel's .maxclusterrank.
absl::Status ResolveCluster(const Driver& driver, const Kernel& kernel,
                            const LaunchRequest& request, exec::LaunchSetup& setup) {
  const exec::Function& f = *kernel.function;
  const exec::Dim3 required{f.required_cluster[0], f.required_cluster[1], f.required_cluster[2]};
  const bool has_required = required.x != 0;
  if (request.cluster) {
    const exec::Dim3& given = *request.cluster;
    if (given.Count() == 0) {
      return CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE, "a cluster dimension is 0");
    }
    if (has_required && (given.x != required.x || given.y != required.y || given.z != required.z)) {
      return CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                       fmt::format("cluster {}x{}x{} differs from the kernel's .reqnctapercluster "
                                   "{}x{}x{}",
                                   given.x, given.y, given.z, required.x, required.y, required.z));
    }
    setup.cluster = given;
  } else if (has_required) {
    setup.cluster = required;
  } else if (f.explicit_cluster) {
    return CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                     "the kernel is .explicitcluster: the launch needs cluster dimensions");
  }
  setup.explicit_cluster = request.cluster.has_value() || f.explicit_cluster;
  const exec::Dim3& shape = setup.cluster;
  if (setup.explicit_cluster && driver.config().cc_major < 9) {
    // Without clusters, a 1x1x1 cluster attribute asks for what every launch is anyway.
    if (shape.Count() > 1 || f.explicit_cluster) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                       "thread-block clusters need compute capability 9.0");
    }
    setup.explicit_cluster = false;
  }
  if (request.grid.x % shape.x != 0 || request.grid.y % shape.y != 0 ||
      request.grid.z % shape.z != 0) {
    return CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                     fmt::format("cluster {}x{}x{} does not divide the grid {}x{}x{}", shape.x,
                                 shape.y, shape.z, request.grid.x, request.grid.y, request.grid.z));
  }
  const uint64_t limit =
      kernel.non_portable_cluster ? kNonPortableClusterSize : kPortableClusterSize;
  if (shape.Count() > limit || (f.max_cluster_rank != 0 && shape.Count() > f.max_cluster_rank)) {
    return CudaError(
        CUDA_ERROR_INVALID_CLUSTER_SIZE,
        fmt::format(
            "a cluster of {} CTAs exceeds the limit of {}", shape.Count(),
            f.max_cluster_rank != 0 ? std::min<uint64_t>(limit, f.max_cluster_rank) : limit));
  }
  return absl::OkStatus();
}

absl::Status Launch(Driver& driver, const LaunchRequest& request) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(request.function));
  TALLY_RETURN_IF_ERROR(CheckShape(*kernel, request.grid, request.block, request.dynamic_shared));
  // The blocks the device holds at once: a cooperative grid, and each cluster, must fit in them
  // (they are dispatched only as a whole).
  const uint64_t resident =
      uint64_t(MaxActiveBlocksPerSm(*kernel, request.block.Count(), request.dynamic_shared)) *
      driver.config().sm_count;
  if (request.cooperative) {
    // Every block of a cooperative grid must be resident at once (CUDA driver API,
    // cuLaunchCooperativeKernel).
    if (request.grid.Count() > resident) {
      return CudaError(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                       fmt::format("cooperative grid of {} blocks exceeds the {} resident blocks",
                                   request.grid.Count(), resident));
    }
  }
  TALLY_ASSIGN_OR_RETURN(Driver::BoundStream target, driver.ResolveStream(request.stream));
  auto setup = std::make_shared<exec::LaunchSetup>();
  TALLY_ASSIGN_OR_RETURN(setup->params,
                         PackParams(*kernel->function, request.kernel_params, request.extra));
  setup->launch_id = driver.NextLaunchId();
  setup->function = kernel->function;
  setup->memory = &driver.memory();
  setup->grid = request.grid;
  setup->block = request.block;
  setup->dynamic_shared_bytes = request.dynamic_shared;
  setup->sm_count = static_cast<uint32_t>(driver.config().sm_count);
  setup->cooperative = request.cooperative;
  // "Priorities follow a convention where lower numbers imply greater priorities"
  // (cuStreamCreateWithPriority); a launch's own priority attribute overrides its stream's.
  setup->priority = request.priority.value_or(target.stream->priority());
  setup->tenant = target.stream->tenant();
  if (setup->tenant != 0) setup->output = &driver.tenant_output();
  TALLY_RETURN_IF_ERROR(ResolveCluster(driver, *kernel, request, *setup));
  if (setup->cluster.Count() > resident) {
    return CudaError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                     fmt::format("{} CTAs that must be resident together exceed the {} blocks "
                                 "the SMs hold at once",
                                 setup->cluster.Count(), resident));
  }
  setup->textures = &driver.textures();
  setup->stack_size = target.context->limit(CU_LIMIT_STACK_SIZE);
  if (request.cooperative) {
    TALLY_ASSIGN_OR_RETURN(setup->grid_workspace, NewGridWorkspace(driver, *target.context));
  }
  std::shared_ptr<DeviceHeap> heap;  // kept alive by the queued launch
  if (kernel->function->uses_heap) {
    target.context->fix_heap();
    heap = target.context->heap(driver.memory());
    heap->set_capacity(target.context->limit(CU_LIMIT_MALLOC_HEAP_SIZE));
    setup->heap = heap.get();
  }
  std::weak_ptr<Context> context = target.context;
  exec::SmPool* pool = &driver.sm_pool();
  DeviceMemory* memory = &driver.memory();
  TenantFaults* faults = &driver.tenant_faults();
  target.context->Enqueue(target.stream, {}, [kernel, setup, context, pool, memory, heap, faults] {
    auto owner = context.lock();
    Stream* stream = Stream::Current();  // this work item runs on its stream's worker
    if (owner != nullptr && owner->sticky_error() == CUDA_SUCCESS &&
        faults->Error(setup->tenant) == CUDA_SUCCESS && !stream->cancelled()) {
      stream->WatchLaunch(&setup->abort);  // tallyEmuStreamCancel stops the grid
      absl::Status status = pool->Run(*setup);
      stream->WatchLaunch(nullptr);
      // Cancelled: the library is unloading, or the stream was cancelled (no error then).
      if (!status.ok() && !absl::IsCancelled(status) && !stream->cancelled()) {
        TALLY_LOG_ERROR("emu: launch failed{}: {}",
                        setup->tenant != 0 ? fmt::format(" (tenant {})", setup->tenant) : "",
                        std::string(status.message()));
        if (setup->tenant != 0) {
          faults->Record(setup->tenant, ToCuResult(status));
        } else {
          owner->SetStickyError(ToCuResult(status));
        }
      }
    }
    // The context's memory is released only after its queued work ran, so this is still ours.
    if (setup->grid_workspace != 0) {
      memory
          ->Release(setup->grid_workspace, KindBit(AllocationKind::kDevice),
                    CUDA_ERROR_INVALID_VALUE)
          .IgnoreError();
    }
  });
  return absl::OkStatus();
}

// Applies cuLaunchKernelEx's attributes to `request`. Performance hints are accepted and have no
// effect (the priority is not a hint: it orders dispatch); what the emulator cannot honour is
// refused.
absl::Status ApplyAttributes(const CUlaunchConfig& config, LaunchRequest& request) {
  if (config.numAttrs > 0 && config.attrs == nullptr) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "numAttrs > 0 but attrs is null");
  }
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config.attrs[i];
    switch (attribute.id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      // Launches are always fully serialised in stream order, which this attribute only relaxes.
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        break;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        request.cooperative = attribute.value.cooperative != 0;
        break;
      // The launch's dispatch priority, clamped to the stream priority range as stream
      // priorities are.
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        request.priority =
            std::clamp(attribute.value.priority, kGreatestStreamPriority, kLeastStreamPriority);
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
        const auto& dim = attribute.value.clusterDim;
        request.cluster = exec::Dim3{dim.x, dim.y, dim.z};
        break;
      }
      // A best-effort grouping into larger clusters: the device may always launch the regular
      // clusters instead (CUDA driver API, cuLaunchKernelEx), which the emulator does.
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        break;
      case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
        return CudaError(CUDA_ERROR_INVALID_VALUE,
                         "device-updatable kernel nodes exist only in stream capture");
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
        return CudaError(
            CUDA_ERROR_NOT_SUPPORTED,
            fmt::format("launch attribute {} is not supported", static_cast<int>(attribute.id)));
      default:
        return CudaError(CUDA_ERROR_INVALID_VALUE, fmt::format("unknown launch attribute {}",
                                                               static_cast<int>(attribute.id)));
    }
  }
  return absl::OkStatus();
}

// The launch a CUlaunchConfig describes (cuLaunchKernelEx), its attributes applied.
absl::StatusOr<LaunchRequest> RequestOf(const CUlaunchConfig& config, CUfunction function,
                                        void** kernel_params, void** extra) {
  LaunchRequest request{function,
                        {config.gridDimX, config.gridDimY, config.gridDimZ},
                        {config.blockDimX, config.blockDimY, config.blockDimZ},
                        config.sharedMemBytes,
                        config.hStream,
                        kernel_params,
                        extra,
                        false};
  TALLY_RETURN_IF_ERROR(ApplyAttributes(config, request));
  return request;
}

// cuOccupancyMaxActiveClusters: the emulated GPU schedules a cluster's blocks together on any
// of its SMs (it has no GPCs), so as many clusters fit at once as the blocks resident on the
// whole device hold. The cluster shape is resolved as a launch's (the grid is taken to be one
// cluster: the query has no grid to check); a kernel without a cluster shape of its own needs
// one in the configuration.
absl::StatusOr<int> MaxActiveClusters(Driver& driver, CUfunction function,
                                      const CUlaunchConfig& config) {
  TALLY_ASSIGN_OR_RETURN(LaunchRequest request, RequestOf(config, function, nullptr, nullptr));
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(function));
  const exec::Function& f = *kernel->function;
  if (!request.cluster && f.required_cluster[0] == 0) {
    return CudaError(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                     "the kernel has no cluster shape and the configuration gives none");
  }
  request.grid = request.cluster.value_or(
      exec::Dim3{f.required_cluster[0], f.required_cluster[1], f.required_cluster[2]});
  exec::LaunchSetup setup;
  TALLY_RETURN_IF_ERROR(ResolveCluster(driver, *kernel, request, setup));
  if (driver.config().cc_major < 9) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "thread-block clusters need compute capability 9.0");
  }
  TALLY_RETURN_IF_ERROR(CheckShape(*kernel, request.grid, request.block, request.dynamic_shared));
  const uint64_t resident =
      uint64_t(MaxActiveBlocksPerSm(*kernel, request.block.Count(), request.dynamic_shared)) *
      driver.config().sm_count;
  return static_cast<int>(resident / setup.cluster.Count());
}

// cuLaunchKernel and cuLaunchCooperativeKernel: a grid given by its dimensions.
CUresult LaunchGrid(CUfunction function, exec::Dim3 grid, exec::Dim3 block,
                    uint32_t dynamic_shared, CUstream stream, void** kernel_params, void** extra,
                    bool cooperative) noexcept {
  return Run([&](Driver& driver) {
    return Launch(driver, {function, grid, block, dynamic_shared, stream, kernel_params, extra,
                           cooperative});
  });
}

}  // namespace
}  // namespace tally::emu

using tally::emu::Launch;
using tally::emu::LaunchGrid;
using tally::emu::LaunchRequest;

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  return LaunchGrid(f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ},
                    sharedMemBytes, hStream, kernelParams, extra, false);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void** kernelParams) {
  return LaunchGrid(f, {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ},
                    sharedMemBytes, hStream, kernelParams, nullptr, true);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  return Run([&](Driver& driver) -> absl::Status {
    if (config == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null launch config");
    TALLY_ASSIGN_OR_RETURN(const LaunchRequest request,
                           tally::emu::RequestOf(*config, f, kernelParams, extra));
    return Launch(driver, request);
  });
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(numBlocks));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(func));
    if (blockSize <= 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "block size must be positive");
    *numBlocks = tally::emu::MaxActiveBlocksPerSm(*kernel, static_cast<uint32_t>(blockSize),
                                                  dynamicSMemSize);
    return absl::OkStatus();
  });
}

CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                      const CUlaunchConfig* config) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(numClusters));
    if (config == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null launch config");
    TALLY_ASSIGN_OR_RETURN(*numClusters, tally::emu::MaxActiveClusters(driver, func, *config));
    return absl::OkStatus();
  });
}

}  // extern "C"
