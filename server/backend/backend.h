// The device backend: the CUDA driver API loaded with dlopen, from NVIDIA's libcuda.so.1 or from
// libtally_emu.so, with every entry point tally-server calls resolved into one table.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/device_uuid.h"
#include "cuda_abi/driver_extensions.h"

namespace tally::server {

// One function pointer per line of driver_api.def. Members are spelled like the driver
// functions, so `api.cuMemAlloc(...)` reads like a driver call (cuda.h's macros rename both
// the same way).
struct DriverApi {
#define TALLY_DRIVER_ENTRY(name, version) PFN_##name##_v##version name = nullptr;
#define TALLY_DRIVER_OPTIONAL(name, version) PFN_##name##_v##version name = nullptr;
#include "server/backend/driver_api.def"
};

// The emulated GPU's extensions (cuda_abi/driver_extensions.h), resolved when it is the backend;
// null with NVIDIA's driver, which has none of them.
struct EmulatorExtensions {
  PFN_tallyEmuStreamCancel stream_cancel = nullptr;
  // Tenants (one per client): fault containment and memory isolation. Null also on the emulated
  // GPU when BackendOptions::emulator_tenants is false.
  PFN_tallyEmuStreamSetTenant stream_set_tenant = nullptr;
  PFN_tallyEmuMemSetTenant mem_set_tenant = nullptr;
  PFN_tallyEmuModuleSetTenant module_set_tenant = nullptr;
  PFN_tallyEmuTenantGetError tenant_get_error = nullptr;
  PFN_tallyEmuTenantTakeOutput tenant_take_output = nullptr;  // each client's device printf
};

// Set in the environment, the emulated GPU's tenant extensions are not used, so that the
// emulator behaves like NVIDIA's shared context (a fault poisons it for every client): how the
// server copes with that is tested without a GPU.
inline constexpr char kNoEmulatorTenantsEnv[] = "TALLY_EMU_NO_TENANTS";

struct BackendOptions {
  bool emulate = false;          // use the emulator even when a GPU is present
  int device = 0;                // ordinal on the backend
  std::string emulator_library;  // path of libtally_emu.so
  bool emulator_tenants = true;  // resolve the emulator's tenant extensions
  std::optional<DeviceUuid> device_uuid{};  // when set, the device with this UUID, not `device`
};

// An initialised driver with the device's primary context retained. Lives for the whole server.
class Backend {
 public:
  // Loads libcuda.so.1 unless options.emulate; the emulator only with options.emulate or when
  // no libcuda.so.1 is installed. An installed driver that fails to load or initialise, or lacks
  // the device, is an error (FailedPrecondition, saying why). `description()` says which backend
  // and why.
  static absl::StatusOr<Backend> Load(const BackendOptions& options);
  Backend(Backend&& other) noexcept;
  Backend& operator=(Backend&&) = delete;
  Backend(const Backend&) = delete;
  ~Backend();
  // The primary context stays retained at destruction: releasing it waits for every kernel, and
  // a kernel of an abandoned client may never end (the process's exit tears it down instead).
  void KeepContextAtExit() { keep_context_ = true; }

  const DriverApi& api() const { return api_; }
  // For tests that make an entry point answer what the emulated GPU cannot be made to.
  DriverApi& api_for_testing() { return api_; }
  const EmulatorExtensions& extensions() const { return extensions_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }  // the device's ordinal on the driver
  CUcontext context() const { return context_.load(std::memory_order_acquire); }
  bool emulated() const { return emulated_; }
  // Whether a fault in one client's kernel poisons the context for all (NVIDIA's driver, or the
  // emulated GPU without its tenant extensions): server/context_faults.h then recovers.
  bool FaultsAreShared() const { return extensions_.tenant_get_error == nullptr; }
  const std::string& description() const { return description_; }

  // Makes the primary context current on the calling thread (every server thread that calls
  // the driver does this once: contexts are per-thread state, CUDA Driver API "Context
  // Management").
  absl::Status MakeCurrent() const;
  // After a fault poisoned the context: destroys everything in it (cuDevicePrimaryCtxReset),
  // keeps it retained, and makes it current on the calling thread. Nothing may use the old
  // context's objects afterwards, and no other thread may use the driver meanwhile.
  absl::Status ResetContext();

 private:
  Backend() = default;

  void* library_ = nullptr;
  DriverApi api_;
  EmulatorExtensions extensions_;
  CUdevice device_ = 0;
  int ordinal_ = 0;
  // Atomic: ResetContext may replace it while other threads read it to make it current.
  std::atomic<CUcontext> context_{nullptr};
  bool emulated_ = false;
  bool keep_context_ = false;
  std::string description_;
};

}  // namespace tally::server
