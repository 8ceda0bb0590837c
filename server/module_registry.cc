// Loading a fatbin: the PTX the driver would pick for the device (ptx_transform), parsed for the
// kernels' parameter layouts, and loaded with cuModuleLoadData. PTX rather than a cubin because
// the scheduler's kernel transformations (ARCHITECTURE.md) work on PTX.
#include "server/module_registry.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/parser.h"
#include "server/cuda_result.h"

namespace tally::server {

SharedModule::~SharedModule() {
  const CUresult result = api_.cuModuleUnload(module_);
  if (result != CUDA_SUCCESS) TALLY_LOG_WARN("cuModuleUnload failed with CUresult {}", +result);
}

absl::StatusOr<const Kernel*> SharedModule::FindKernel(const std::string& mangled_name) const {
  auto it = kernels_.find(mangled_name);
  if (it == kernels_.end()) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("the module has no kernel named '%s'", mangled_name));
  }
  return &it->second;
}

ModuleRegistry::ModuleRegistry(const Backend& backend) : backend_(backend) {
  int major = 0;
  int minor = 0;
  backend.api().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     backend.device());
  backend.api().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     backend.device());
  device_arch_ = static_cast<uint32_t>(major * 10 + minor);
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::Register(
    std::span<const std::byte> image) {
  const uint64_t hash = ipc::ContentHash(image);
  std::lock_guard lock(mutex_);
  if (auto it = modules_.find(hash); it != modules_.end()) {
    std::shared_ptr<SharedModule> module = it->second.lock();
    if (module != nullptr && std::ranges::equal(module->image(), image)) return module;
  }
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> module, Load(image));
  modules_[hash] = module;  // a colliding different fatbin replaces the entry; both stay valid
  for (auto it = modules_.begin(); it != modules_.end();) {
    // flat_hash_map::erase(it++) is the documented way to erase while iterating.
    if (it->second.expired()) {
      modules_.erase(it++);
    } else {
      ++it;
    }
  }
  return module;
}

size_t ModuleRegistry::loaded_count() {
  std::lock_guard lock(mutex_);
  return static_cast<size_t>(
      std::ranges::count_if(modules_, [](const auto& entry) { return !entry.second.expired(); }));
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::Load(
    std::span<const std::byte> image) {
  auto entries = ptx::ReadFatbin({reinterpret_cast<const uint8_t*>(image.data()), image.size()});
  if (!entries.ok()) {
    return ClientError(CUDA_ERROR_INVALID_IMAGE,
                       absl::StrFormat("not a fatbin: %s", entries.status().message()));
  }
  const ptx::FatbinEntry* ptx = ptx::SelectPtxForArch(*entries, device_arch_);
  if (ptx == nullptr) {
    return ClientError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       absl::StrFormat("the fatbin has no PTX for sm_%d", device_arch_));
  }
  auto parsed = ptx::ParseModuleOrError(ptx->payload, "<fatbin ptx>");
  if (!parsed.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, parsed.status().message());
  auto signatures = ptx::ComputeSignatures(*parsed);
  if (!signatures.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, signatures.status().message());

  const DriverApi& api = backend_.api();
  CUmodule module = nullptr;
  // payload is a std::string: c_str() gives the NUL terminator cuModuleLoadData needs for PTX.
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuModuleLoadData(&module, ptx->payload.c_str()), "cuModuleLoadData"));
  absl::flat_hash_map<std::string, Kernel> kernels;
  for (ptx::KernelSignature& signature : *signatures) {
    Kernel kernel;
    const CUresult found =
        api.cuModuleGetFunction(&kernel.function, module, signature.name.c_str());
    if (found != CUDA_SUCCESS) {
      api.cuModuleUnload(module);
      return CheckCu(found, "cuModuleGetFunction");
    }
    kernel.signature = std::move(signature);
    kernels.emplace(kernel.signature.name, std::move(kernel));
  }
  TALLY_LOG_INFO("loaded a fatbin ({} bytes, sm_{} PTX) with {} kernel(s)", image.size(), ptx->arch,
                 kernels.size());
  return std::make_shared<SharedModule>(
      api, module, std::vector<std::byte>(image.begin(), image.end()), std::move(kernels));
}

}  // namespace tally::server
