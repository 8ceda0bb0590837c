// Choosing and loading the device backend. Entry points are resolved through the driver's own
// cuGetProcAddress with the version each was written against (CUDA Driver API, "Driver Entry
// Point Access"), so a newer driver keeps the semantics this code expects.
#include "server/backend/backend.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

constexpr char kNvidiaDriver[] = "libcuda.so.1";

absl::StatusOr<void*> OpenLibrary(const std::string& path) {
  // RTLD_LOCAL: the emulator's (hidden) symbols and NVIDIA's must not interpose on ours.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::NotFoundError(absl::StrFormat("dlopen(%s): %s", path, dlerror()));
  }
  return library;
}

absl::Status ResolveEntries(void* library, DriverApi& api) {
  auto get_proc =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return absl::NotFoundError("the driver library exports no cuGetProcAddress_v2");
  }
  // The entry `name` of CUDA `version`, or null.
  auto lookup = [get_proc](const char* name, int version) -> void* {
    void* entry = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc(name, &entry, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS) {
      return nullptr;
    }
    return entry;
  };
#define TALLY_DRIVER_OPTIONAL(name, version) \
  api.name = reinterpret_cast<PFN_##name##_v##version>(lookup(#name, version));
#define TALLY_DRIVER_ENTRY(name, version)                                             \
  api.name = reinterpret_cast<PFN_##name##_v##version>(lookup(#name, version));       \
  if (api.name == nullptr) {                                                          \
    return absl::NotFoundError(                                                       \
        absl::StrFormat("the driver has no %s for CUDA version %d", #name, version)); \
  }
#include "server/backend/driver_api.def"
  return absl::OkStatus();
}

absl::StatusOr<DeviceUuid> UuidOf(const DriverApi& api, int ordinal) {
  CUdevice device = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuDeviceGet(&device, ordinal), "cuDeviceGet"));
  CUuuid uuid{};
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuDeviceGetUuid(&uuid, device), "cuDeviceGetUuid"));
  DeviceUuid bytes{};
  std::memcpy(bytes.data(), uuid.bytes, bytes.size());
  return bytes;
}

// The ordinal of the device with `uuid` among `count`; NotFound listing the devices if none.
absl::StatusOr<int> FindDevice(const DriverApi& api, int count, const DeviceUuid& uuid) {
  std::string devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    TALLY_ASSIGN_OR_RETURN(const DeviceUuid candidate, UuidOf(api, ordinal));
    if (candidate == uuid) return ordinal;
    absl::StrAppendFormat(&devices, "%s%d: %s", devices.empty() ? "" : ", ", ordinal,
                          FormatDeviceUuid(candidate));
  }
  return absl::NotFoundError(absl::StrFormat("no device has the UUID %s; the devices are %s",
                                             FormatDeviceUuid(uuid), devices));
}

// Initialises a loaded driver and returns the ordinal of the device `options` selects, or why
// there is none.
absl::StatusOr<int> InitDriver(void* library, const BackendOptions& options, DriverApi& api) {
  TALLY_RETURN_IF_ERROR(ResolveEntries(library, api));
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuInit(0), "cuInit"));
  int count = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (options.device_uuid) return FindDevice(api, count, *options.device_uuid);
  if (options.device < 0 || options.device >= count) {
    return absl::NotFoundError(absl::StrFormat(
        "device %d requested but the driver has %d device(s)", options.device, count));
  }
  return options.device;
}

template <typename T>
void Resolve(void* library, const char* name, T& entry) {
  entry = reinterpret_cast<T>(dlsym(library, name));
}

void ResolveExtensions(void* library, bool tenants, EmulatorExtensions& extensions) {
  Resolve(library, "tallyEmuStreamCancel", extensions.stream_cancel);
  if (!tenants) {
    TALLY_LOG_INFO("the emulated GPU's tenants are off ({}): a faulting kernel breaks the "
                   "shared context, as on NVIDIA's driver",
                   kNoEmulatorTenantsEnv);
    return;
  }
  Resolve(library, "tallyEmuStreamSetTenant", extensions.stream_set_tenant);
  Resolve(library, "tallyEmuMemSetTenant", extensions.mem_set_tenant);
  Resolve(library, "tallyEmuModuleSetTenant", extensions.module_set_tenant);
  Resolve(library, "tallyEmuTenantGetError", extensions.tenant_get_error);
  Resolve(library, "tallyEmuTenantTakeOutput", extensions.tenant_take_output);
}

}  // namespace

absl::StatusOr<Backend> Backend::Load(const BackendOptions& options) {
  Backend backend;
  if (!options.emulate) {
    // Only a missing driver selects the emulated GPU: an installed driver that fails (no device
    // visible, a broken installation, a version mismatch) is the operator's to fix, and serving
    // an emulated GPU instead would quietly be a thousand times slower.
    void* nvidia = dlopen(kNvidiaDriver, RTLD_NOW | RTLD_LOCAL);
    if (nvidia == nullptr) {
      const std::string error = dlerror();
      if (!error.starts_with(std::string(kNvidiaDriver) + ": cannot open shared object file")) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "the NVIDIA driver (%s) is installed but cannot be loaded: %s; fix the driver, or "
            "start with --emulate to serve the emulated GPU instead",
            kNvidiaDriver, error));
      }
      backend.description_ = absl::StrFormat(
          "emulated GPU (%s) because no NVIDIA driver is installed (%s)",
          options.emulator_library, error);
    } else if (const absl::StatusOr<int> usable = InitDriver(nvidia, options, backend.api_);
               !usable.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the NVIDIA driver (%s) is installed but not usable: %s; fix the driver or the device "
          "selection, or start with --emulate to serve the emulated GPU instead",
          kNvidiaDriver, usable.status().message()));
    } else {
      backend.library_ = nvidia;
      backend.ordinal_ = *usable;
      backend.description_ =
          absl::StrFormat("NVIDIA driver (%s), device %d", kNvidiaDriver, *usable);
    }
  } else {
    backend.description_ =
        absl::StrFormat("emulated GPU (%s) as requested", options.emulator_library);
  }
  if (backend.library_ == nullptr) {
    TALLY_ASSIGN_OR_RETURN(backend.library_, OpenLibrary(options.emulator_library));
    backend.emulated_ = true;
    TALLY_ASSIGN_OR_RETURN(backend.ordinal_, InitDriver(backend.library_, options, backend.api_));
    ResolveExtensions(backend.library_, options.emulator_tenants, backend.extensions_);
  }
  const DriverApi& api = backend.api_;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuDeviceGet(&backend.device_, backend.ordinal_), "cuDeviceGet"));
  CUcontext context = nullptr;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuDevicePrimaryCtxRetain(&context, backend.device_), "cuDevicePrimaryCtxRetain"));
  backend.context_.store(context);
  return backend;
}

Backend::Backend(Backend&& other) noexcept
    : library_(std::exchange(other.library_, nullptr)),
      api_(other.api_),
      extensions_(other.extensions_),
      device_(other.device_),
      ordinal_(other.ordinal_),
      context_(other.context_.exchange(nullptr)),
      emulated_(other.emulated_),
      keep_context_(other.keep_context_),
      description_(std::move(other.description_)) {}

Backend::~Backend() {
  if (context_.load() != nullptr && !keep_context_) api_.cuDevicePrimaryCtxRelease(device_);
  // The library stays loaded: driver threads may still run, and unloading a driver at exit
  // buys nothing.
}

absl::Status Backend::MakeCurrent() const {
  return CheckCu(api_.cuCtxSetCurrent(context()), "cuCtxSetCurrent");
}

absl::Status Backend::ResetContext() {
  TALLY_RETURN_IF_ERROR(CheckCu(api_.cuDevicePrimaryCtxReset(device_), "cuDevicePrimaryCtxReset"));
  // The reset keeps the primary context retained; the driver documents no new handle, but a
  // retain says which handle is the primary context now, and its release keeps the count.
  CUcontext context = nullptr;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api_.cuDevicePrimaryCtxRetain(&context, device_), "cuDevicePrimaryCtxRetain"));
  TALLY_RETURN_IF_ERROR(
      CheckCu(api_.cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease"));
  context_.store(context, std::memory_order_release);
  return MakeCurrent();
}

}  // namespace tally::server
