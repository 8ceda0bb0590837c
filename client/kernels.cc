// Lazy kernel resolution: programs that never launch a kernel of a fatbin never upload it.
#include "client/kernels.h"

#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/copy.h"
#include "client/fatbin_image.h"
#include "client/module_upload.h"
#include "client/status.h"
#include "common/log.h"
#include "common/status.h"

namespace tally::client {

KernelRegistry& KernelRegistry::Get() {
  // Never destroyed: kernels may launch from other threads while static destructors run.
  static KernelRegistry* const registry = new KernelRegistry;
  return *registry;
}

Fatbin* KernelRegistry::AddFatbin(const void* wrapper) {
  std::lock_guard lock(mutex_);
  auto& fatbin = fatbins_.emplace_back(std::make_unique<Fatbin>());
  fatbin->wrapper = wrapper;
  return fatbin.get();
}

void KernelRegistry::AddKernel(Fatbin* fatbin, const void* host_function, const char* device_name) {
  auto kernel = std::make_unique<Kernel>();
  kernel->fatbin = fatbin;
  kernel->name = device_name;
  kernel->host_function = host_function;
  std::lock_guard lock(mutex_);
  kernels_[host_function] = std::move(kernel);
}

void KernelRegistry::AddVariable(Fatbin* fatbin, const void* host_variable, const char* device_name,
                                 size_t size) {
  auto variable = std::make_unique<Variable>();
  variable->fatbin = fatbin;
  variable->name = device_name;
  variable->size = size;
  std::lock_guard lock(mutex_);
  variables_[host_variable] = std::move(variable);
}

void KernelRegistry::AddManagedVariable(Fatbin* fatbin, void** host_pointer,
                                        const char* device_name, size_t size) {
  std::lock_guard lock(fatbin->mutex);
  fatbin->managed.push_back({host_pointer, device_name, size});
}

absl::Status KernelRegistry::PlaceManagedVariablesAgain() {
  std::lock_guard lock(mutex_);
  absl::Status first_failure;
  for (const std::unique_ptr<Fatbin>& fatbin : fatbins_) {
    std::lock_guard fatbin_lock(fatbin->mutex);
    if (fatbin->module == 0) continue;  // nothing of it was placed
    ForgetManagedVariables(fatbin->managed);
    if (!fatbin->refused.ok()) continue;
    absl::Status placed = PlaceManagedVariables(fatbin->module, fatbin->managed);
    if (!placed.ok()) {
      // Its kernels would not see the program's variables: they no longer launch.
      fatbin->refused = placed;
      first_failure.Update(placed);
    }
  }
  return first_failure;
}

absl::StatusOr<Variable*> KernelRegistry::ResolveVariable(const void* host_variable) {
  Variable* variable = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = variables_.find(host_variable);
    if (it == variables_.end()) {
      return CudaError(cudaErrorInvalidSymbol,
                       absl::StrFormat("%p is not a registered device variable", host_variable));
    }
    variable = it->second.get();
  }
  std::lock_guard lock(variable->mutex);
  if (variable->address != 0) return variable;
  TALLY_RETURN_IF_ERROR(Upload(*variable->fatbin));
  TALLY_ASSIGN_OR_RETURN(const ipc::GetGlobalResponse global,
                         FetchGlobal(variable->fatbin->module, variable->name));
  if (global.size < variable->size) {
    return absl::DataLossError("the server's variable is smaller than the registered one");
  }
  variable->address = global.device_ptr;
  return variable;
}

absl::StatusOr<Kernel*> KernelRegistry::Find(const void* host_function) {
  std::lock_guard lock(mutex_);
  auto it = kernels_.find(host_function);
  if (it == kernels_.end()) {
    return CudaError(cudaErrorInvalidDeviceFunction,
                     absl::StrFormat("%p is not a registered kernel", host_function));
  }
  return it->second.get();
}

absl::StatusOr<Kernel*> KernelRegistry::Resolve(const void* host_function) {
  TALLY_ASSIGN_OR_RETURN(Kernel * kernel, Find(host_function));
  TALLY_RETURN_IF_ERROR(Resolve(*kernel));
  return kernel;
}

absl::Status KernelRegistry::Resolve(Kernel& kernel) {
  // Every launch comes here: once resolved, one acquire load and no lock.
  if (kernel.resolved.load(std::memory_order_acquire)) return absl::OkStatus();
  std::lock_guard lock(kernel.mutex);
  if (kernel.resolved.load(std::memory_order_relaxed)) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(Upload(*kernel.fatbin));
  TALLY_RETURN_IF_ERROR(FetchFunction(kernel.fatbin->module, kernel));
  kernel.resolved.store(true, std::memory_order_release);
  return absl::OkStatus();
}

// A fatbin the server's device refused (CUDA_ERROR_INVALID_PTX, NO_BINARY_FOR_GPU, ...) stays
// refused: as with CUDA's runtime, every launch of one of its kernels fails with the error of the
// load (cudaErrorInvalidPtx, cudaErrorNoKernelImageForDevice, which share the driver's values),
// and the rest of the program goes on. A transport failure is not remembered.
absl::Status KernelRegistry::Upload(Fatbin& fatbin) {
  std::lock_guard lock(fatbin.mutex);
  TALLY_RETURN_IF_ERROR(fatbin.refused);
  if (fatbin.module != 0) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(const auto images, FatbinImages(fatbin.wrapper));
  absl::StatusOr<uint64_t> module = RegisterImages(images);
  if (!module.ok() && ToCudaError(module.status()) != cudaErrorDevicesUnavailable) {
    // Every kernel of the fatbin will fail to launch; say why once (launch errors are easy to
    // miss: the code <<<>>> generates discards them).
    fatbin.refused = module.status();
    TALLY_LOG_WARN("tally: the server cannot load this program's device code: {}",
                   std::string(module.status().message()));
  }
  TALLY_RETURN_IF_ERROR(module.status());
  fatbin.module = *module;
  // Without its managed variables placed, the program and the kernels would not share them.
  absl::Status placed = PlaceManagedVariables(fatbin.module, fatbin.managed);
  if (!placed.ok()) {
    fatbin.refused = placed;
    TALLY_LOG_WARN("tally: this program's kernels of one module cannot run: {}",
                   std::string(placed.message()));
  }
  return placed;
}

namespace {

// The CUfunctions handed out. It only grows: the records of unloaded modules stay (marked so).
// Registered kernels (cudaKernel_t) are no CUfunctions and are never here.
class DriverFunctions {
 public:
  static DriverFunctions& Get() {
    static DriverFunctions* const functions = new DriverFunctions;  // never destroyed
    return *functions;
  }
  void Add(const Kernel& kernel) {
    std::lock_guard lock(mutex_);
    handed_out_.insert(&kernel);
  }
  const Kernel* Find(CUfunction function) {
    const auto* kernel = reinterpret_cast<const Kernel*>(function);
    std::lock_guard lock(mutex_);
    return handed_out_.contains(kernel) ? kernel : nullptr;
  }

 private:
  std::mutex mutex_;
  absl::flat_hash_set<const Kernel*> handed_out_;
};

}  // namespace

CUfunction HandOutDriverFunction(const Kernel& kernel) {
  DriverFunctions::Get().Add(kernel);
  return reinterpret_cast<CUfunction>(const_cast<Kernel*>(&kernel));
}

absl::StatusOr<const Kernel*> DriverFunction(CUfunction function) {
  const Kernel* kernel = DriverFunctions::Get().Find(function);
  if (kernel == nullptr) {
    return DriverError(CUDA_ERROR_INVALID_HANDLE, "not a CUfunction of cuModuleGetFunction");
  }
  if (kernel->unloaded.load(std::memory_order_acquire)) {
    return DriverError(CUDA_ERROR_INVALID_HANDLE,
                       absl::StrFormat("%s: its module was unloaded", kernel->name));
  }
  return kernel;
}

absl::Status FetchFunction(uint64_t module, Kernel& kernel) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::GetFunctionRequest{.module = module},
                                 std::as_bytes(std::span(kernel.name.data(), kernel.name.size()))));
  const uint32_t count = answer.fields.param_count;
  if (answer.tail.size() != count * sizeof(ipc::ParamSlot)) {
    return absl::DataLossError("the server's parameter layout has the wrong size");
  }
  kernel.params.resize(count);
  if (count != 0) std::memcpy(kernel.params.data(), answer.tail.data(), answer.tail.size());
  for (const ipc::ParamSlot& slot : kernel.params) {
    if (slot.offset > answer.fields.param_buffer_size ||
        slot.size > answer.fields.param_buffer_size - slot.offset) {
      return absl::DataLossError("the server's parameter layout exceeds its buffer");
    }
  }
  kernel.param_buffer_size = answer.fields.param_buffer_size;
  kernel.max_threads_per_block = answer.fields.max_threads_per_block;
  kernel.static_shared_bytes = answer.fields.static_shared_bytes;
  kernel.max_dynamic_shared_bytes.store(answer.fields.max_dynamic_shared_bytes,
                                        std::memory_order_relaxed);
  kernel.function = answer.fields.function;
  return absl::OkStatus();
}

absl::StatusOr<ipc::GetGlobalResponse> FetchGlobal(uint64_t module, const std::string& name) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer,
                         channel->Call(ipc::GetGlobalRequest{.module = module},
                                       std::as_bytes(std::span(name.data(), name.size()))));
  DeviceRanges::Get().Add(answer.fields.device_ptr, answer.fields.size, RangeKind::kVariable);
  return answer.fields;
}

}  // namespace tally::client
