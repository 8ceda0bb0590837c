// The process-wide emulated driver: initialisation state, the device, the address space, the
// registries of live handles, and each thread's context stack.
#pragma once

#include <cuda.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "absl/status/statusor.h"
#include "emulator/exec/sm_pool.h"
#include "emulator/internal/config.h"
#include "emulator/internal/context.h"
#include "emulator/internal/device_memory.h"
#include "emulator/internal/event.h"
#include "emulator/internal/handle_table.h"
#include "emulator/internal/link_state.h"
#include "emulator/internal/module.h"
#include "emulator/internal/stream.h"
#include "emulator/internal/tenant_faults.h"
#include "emulator/internal/tenant_output.h"
#include "emulator/internal/texture.h"
#include "emulator/internal/virtual_memory.h"

namespace tally::emu {

enum class DriverState : uint8_t { kUninitialized, kReady, kShutDown };

using ContextTable = HandleTable<Context, CUcontext, 1, CUDA_ERROR_INVALID_CONTEXT>;
using StreamTable = HandleTable<Stream, CUstream, 2, CUDA_ERROR_INVALID_HANDLE>;
using EventTable = HandleTable<Event, CUevent, 3, CUDA_ERROR_INVALID_HANDLE>;
using ModuleTable = HandleTable<ModuleEntry, CUmodule, 4, CUDA_ERROR_INVALID_HANDLE>;
using KernelTable = HandleTable<Kernel, CUfunction, 5, CUDA_ERROR_INVALID_HANDLE>;
using LinkTable = HandleTable<LinkState, CUlinkState, 8, CUDA_ERROR_INVALID_HANDLE>;

class Driver {
 public:
  static DriverState State();
  // The driver; only valid while State() == kReady.
  static Driver& Get();
  static absl::Status Initialize(unsigned flags);
  // Library teardown: later calls answer CUDA_ERROR_DEINITIALIZED.
  static void Shutdown();
  // Held shared by every entry point that uses the driver, exclusively by Shutdown, so that
  // teardown never frees the driver under a call in flight on another thread.
  static std::shared_timed_mutex& ApiMutex();

  const DeviceConfig& config() const { return config_; }
  DeviceMemory& memory() { return *memory_; }
  VirtualMemory& virtual_memory() { return *virtual_memory_; }
  // Waits for the work queued so far in every active context (the device-wide synchronisation
  // of calls such as cuMemUnmap, CUDA driver API "API synchronization behavior").
  void SynchronizeDevice();
  ContextTable& contexts() { return contexts_; }
  StreamTable& streams() { return streams_; }
  EventTable& events() { return events_; }
  ModuleTable& modules() { return modules_; }
  KernelTable& kernels() { return kernels_; }
  LinkTable& links() { return links_; }
  // The kernel behind `handle` where the emulated GPU can run it; CUDA_ERROR_INVALID_PTX ("a PTX
  // JIT compilation failed"), naming the construct, for a kernel lowering refused.
  absl::StatusOr<std::shared_ptr<Kernel>> UsableKernel(CUfunction handle);
  ArrayTable& arrays() { return arrays_; }
  TextureTable& textures() { return textures_; }
  // Sticky errors of tenants (cuda_abi/driver_extensions.h), which never become their context's.
  TenantFaults& tenant_faults() { return tenant_faults_; }
  TenantOutput& tenant_output() { return tenant_output_; }
  // The virtual SMs (started on first use).
  exec::SmPool& sm_pool();
  uint64_t NextLaunchId() { return next_launch_id_++; }

  // INVALID_DEVICE unless `device` is an ordinal of the emulated device (config().device_count).
  absl::Status CheckDevice(CUdevice device) const;

  // The calling thread's current context (INVALID_CONTEXT when there is none or it was
  // destroyed); fails with the context's sticky error once asynchronous work faulted.
  absl::StatusOr<std::shared_ptr<Context>> CurrentContext();
  // The sticky error of the calling thread's current context, as calls that name no context
  // (cuEventQuery) report it in a faulted context; OK without a current context.
  absl::Status CurrentContextSticky();
  absl::StatusOr<std::shared_ptr<Context>> LookupContext(CUcontext handle);
  // A stream handle with its context. NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the
  // current context's NULL stream (per-thread default streams run with legacy semantics, which
  // only adds ordering); other handles must be live streams. Fails with the context's sticky
  // error once asynchronous work in it faulted, or with the stream's tenant's.
  struct BoundStream {
    std::shared_ptr<Context> context;
    std::shared_ptr<Stream> stream;
  };
  absl::StatusOr<BoundStream> ResolveStream(CUstream handle);
  static bool IsNullStream(CUstream handle);

  // The calling thread's context stack (CUDA driver API, "Context Management").
  static std::vector<CUcontext>& ContextStack();

  absl::StatusOr<CUcontext> CreateContext(unsigned flags);
  absl::Status DestroyContext(CUcontext handle);
  // Primary context of the device (CUDA driver API, "Primary Context Management").
  CUcontext PrimaryRetain();
  absl::Status PrimaryRelease();
  void PrimaryReset();
  std::shared_ptr<Context> primary() const { return primary_; }

 private:
  explicit Driver(DeviceConfig config, std::unique_ptr<DeviceMemory> memory);
  // Stops the context's streams and frees everything it owns.
  void ReleaseContextResources(Context& context);

  const DeviceConfig config_;
  std::unique_ptr<DeviceMemory> memory_;
  std::unique_ptr<VirtualMemory> virtual_memory_;  // after memory_, which it charges
  ContextTable contexts_;
  StreamTable streams_;
  EventTable events_;
  ModuleTable modules_;
  KernelTable kernels_;
  LinkTable links_;
  ArrayTable arrays_;
  TextureTable textures_;
  TenantFaults tenant_faults_;
  TenantOutput tenant_output_;
  std::once_flag sm_pool_once_;
  std::unique_ptr<exec::SmPool> sm_pool_;
  std::atomic<uint64_t> next_launch_id_{1};
  std::atomic<uint64_t> next_context_id_{1};
  std::mutex primary_mu_;
  int primary_retain_count_ = 0;  // guarded by primary_mu_
  std::shared_ptr<Context> primary_;
  CUcontext primary_handle_ = nullptr;
};

}  // namespace tally::emu
