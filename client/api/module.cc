// Driver API modules (CUDA Driver API, "Module Management"): cuModuleLoadData[Ex] send PTX text
// or a fatbin to the server the way registered fatbins are sent (kernels.cc), and functions and
// variables are looked up there. A CUfunction is a Kernel record as the runtime's launches use,
// resolved when found, so cuLaunchKernel packs and posts exactly as cudaLaunchKernel does.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "client/channel.h"
#include "client/entry.h"
#include "client/fatbin_image.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "client/module_upload.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::DriverError;
using tally::client::Kernel;
using tally::client::DriverCall;
namespace ipc = tally::ipc;

namespace {

struct DriverModule {
  uint64_t module = 0;  // the server's handle
  std::mutex mutex;
  absl::flat_hash_map<std::string, std::unique_ptr<Kernel>> functions;
};

// The loaded modules by CUmodule. A CUmodule is a serial number shifted into a pointer, never
// dereferenced, so an unloaded or forged one is CUDA_ERROR_INVALID_HANDLE. The Kernel records
// of unloaded modules are kept (marked unloaded) for the same reason: a stale CUfunction must
// stay readable.
class Modules {
 public:
  static Modules& Get() {
    static Modules* const modules = new Modules;  // never destroyed: see Channel::Get
    return *modules;
  }

  CUmodule Add(uint64_t server_module) {
    auto module = std::make_shared<DriverModule>();
    module->module = server_module;
    std::lock_guard lock(mutex_);
    const auto handle = reinterpret_cast<CUmodule>((next_serial_++ << 4) | 0xd);
    live_[handle] = std::move(module);
    return handle;
  }
  absl::StatusOr<std::shared_ptr<DriverModule>> Find(CUmodule handle) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(handle);
    if (it == live_.end()) return DriverError(CUDA_ERROR_INVALID_HANDLE, "no such CUmodule");
    return it->second;
  }
  // Forgets the module; its functions become invalid handles.
  absl::StatusOr<uint64_t> Remove(CUmodule handle) {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<DriverModule> module, Find(handle));
    std::lock_guard module_lock(module->mutex);
    std::lock_guard lock(mutex_);
    if (live_.erase(handle) == 0) return DriverError(CUDA_ERROR_INVALID_HANDLE, "no such CUmodule");
    for (auto& [name, kernel] : module->functions) {
      kernel->unloaded.store(true, std::memory_order_release);
      unloaded_functions_.push_back(std::move(kernel));
    }
    return module->module;
  }

 private:
  std::mutex mutex_;
  uint64_t next_serial_ = 1;
  absl::flat_hash_map<CUmodule, std::shared_ptr<DriverModule>> live_;
  std::vector<std::unique_ptr<Kernel>> unloaded_functions_;
};

absl::Status LoadModule(CUmodule* module, const void* image) {
  TALLY_RETURN_IF_ERROR(CheckOut(module));
  TALLY_ASSIGN_OR_RETURN(const auto images, tally::client::ModuleImages(image));
  TALLY_ASSIGN_OR_RETURN(uint64_t server_module, tally::client::RegisterImages(images));
  *module = Modules::Get().Add(server_module);
  return absl::OkStatus();
}

// cuModuleLoadDataEx's JIT options tune a compilation the server does (or does not need); only
// the error log is answered, with the reason the load failed.
void WriteErrorLog(const absl::Status& status, unsigned int count, const CUjit_option* options,
                   void** values) {
  if (options == nullptr || values == nullptr) return;
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned int i = 0; i < count; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
    }
  }
  if (buffer == nullptr || size == 0) return;
  const size_t n = std::min(status.message().size(), size - 1);
  std::memcpy(buffer, status.message().data(), n);
  buffer[n] = '\0';
}

absl::Status GetFunction(CUfunction* function, CUmodule handle, const char* name) {
  TALLY_RETURN_IF_ERROR(CheckOut(function));
  if (name == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null function name");
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<DriverModule> module, Modules::Get().Find(handle));
  std::lock_guard lock(module->mutex);
  std::unique_ptr<Kernel>& kernel = module->functions[name];
  if (kernel == nullptr) {
    auto found = std::make_unique<Kernel>();
    found->name = name;
    const absl::Status status = tally::client::FetchFunction(module->module, *found);
    if (!status.ok()) {
      module->functions.erase(name);
      return status;
    }
    kernel = std::move(found);
  }
  *function = tally::client::HandOutDriverFunction(*kernel);
  return absl::OkStatus();
}

// Either output may be null (CUDA Driver API, cuModuleGetGlobal).
absl::Status GetGlobal(CUdeviceptr* address, size_t* size, CUmodule handle, const char* name) {
  if (name == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null variable name");
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<DriverModule> module, Modules::Get().Find(handle));
  TALLY_ASSIGN_OR_RETURN(const ipc::GetGlobalResponse global,
                         tally::client::FetchGlobal(module->module, name));
  if (address != nullptr) *address = global.device_ptr;
  if (size != nullptr) *size = global.size;
  return absl::OkStatus();
}

absl::Status UnloadModule(CUmodule handle) {
  TALLY_ASSIGN_OR_RETURN(const uint64_t server_module, Modules::Get().Remove(handle));
  TALLY_ASSIGN_OR_RETURN(tally::client::Channel * channel, tally::client::Channel::Get());
  return channel->Call(ipc::ModuleUnloadRequest{.module = server_module}).status();
}

}  // namespace

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return DriverCall(__func__, [&] { return LoadModule(module, image); });
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count,
                            CUjit_option* options, void** values) {
  return DriverCall(__func__, [&] {
    const absl::Status status = LoadModule(module, image);
    if (!status.ok()) WriteErrorLog(status, count, options, values);
    return status;
  });
}

CUresult cuModuleUnload(CUmodule module) {
  return DriverCall(__func__, [&] { return UnloadModule(module); });
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  return DriverCall(__func__, [&] { return GetFunction(function, module, name); });
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* address, size_t* size, CUmodule module,
                              const char* name) {
  return DriverCall(__func__, [&] { return GetGlobal(address, size, module, name); });
}

}  // extern "C"
