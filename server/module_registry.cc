// Loading a fatbin: the PTX the driver would pick for the device (ptx_transform), parsed for the
// kernels' parameter layouts and module state, and loaded with cuModuleLoadData. PTX rather than
// a cubin because the scheduler's kernel transformations (ARCHITECTURE.md) work on PTX.
#include "server/module_registry.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "ptx_transform/fatbin.h"
#include "ptx_transform/parser.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

// Module-scope variables a program can write (PTX ISA, "State Spaces": .global is per-context
// device memory, .const is written by the host through cudaMemcpyToSymbol).
bool HasModuleState(const ptx::Module& module) {
  return std::ranges::any_of(module.items, [](const ptx::TopLevel& item) {
    const auto* var = std::get_if<ptx::VarDecl>(&item.value);
    return var != nullptr && var->linkage != "extern" &&
           (var->state_space == "global" || var->state_space == "const");
  });
}

}  // namespace

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

absl::StatusOr<std::pair<CUdeviceptr, size_t>> SharedModule::FindGlobal(
    const std::string& mangled_name) const {
  CUdeviceptr address = 0;
  size_t size = 0;
  if (api_.cuModuleGetGlobal(&address, &size, module_, mangled_name.c_str()) != CUDA_SUCCESS) {
    return ClientError(CUDA_ERROR_NOT_FOUND,
                       absl::StrFormat("the module has no variable named '%s'", mangled_name));
  }
  return std::make_pair(address, size);
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
  ForgetExpired();
  Entry& entry = entries_[hash];
  std::shared_ptr<const ParsedImage> parsed = entry.parsed.lock();
  if (parsed == nullptr || !std::ranges::equal(parsed->image, image)) {
    // New content (or a different fatbin with an equal hash, which replaces the entry; modules
    // of the old one stay valid).
    TALLY_ASSIGN_OR_RETURN(parsed, Parse(image));
    entry = Entry{parsed, {}};
  }
  if (std::shared_ptr<SharedModule> shared = entry.shared.lock()) return shared;
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> module, Load(parsed));
  if (!parsed->has_module_state) entry.shared = module;
  return module;
}

size_t ModuleRegistry::loaded_count() {
  std::lock_guard lock(mutex_);
  ForgetExpired();
  return loaded_.size();
}

void ModuleRegistry::ForgetExpired() {
  std::erase_if(loaded_, [](const auto& module) { return module.expired(); });
  for (auto it = entries_.begin(); it != entries_.end();) {
    // flat_hash_map::erase(it++) is the documented way to erase while iterating.
    if (it->second.parsed.expired()) {
      entries_.erase(it++);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<std::shared_ptr<const ParsedImage>> ModuleRegistry::Parse(
    std::span<const std::byte> image) {
  auto entries = ptx::ReadFatbin({reinterpret_cast<const uint8_t*>(image.data()), image.size()});
  if (!entries.ok()) {
    return ClientError(CUDA_ERROR_INVALID_IMAGE,
                       absl::StrFormat("not a fatbin: %s", entries.status().message()));
  }
  const ptx::FatbinEntry* ptx = ptx::SelectPtxForArch(*entries, device_arch_);
  if (ptx == nullptr) {
    return ClientError(CUDA_ERROR_NO_BINARY_FOR_GPU,
                       absl::StrFormat("the fatbin has no PTX that sm_%d can run (Tally loads "
                                       "PTX; device code linked with -rdc=true is not "
                                       "supported yet)",
                                       device_arch_));
  }
  auto module = ptx::ParseModuleOrError(ptx->payload, "<fatbin ptx>");
  if (!module.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, module.status().message());
  auto signatures = ptx::ComputeSignatures(*module);
  if (!signatures.ok()) return ClientError(CUDA_ERROR_INVALID_PTX, signatures.status().message());
  auto parsed = std::make_shared<ParsedImage>();
  parsed->image.assign(image.begin(), image.end());
  parsed->ptx = ptx->payload;
  parsed->ptx_arch = ptx->arch;
  parsed->signatures = *std::move(signatures);
  parsed->has_module_state = HasModuleState(*module);
  return parsed;
}

absl::StatusOr<std::shared_ptr<SharedModule>> ModuleRegistry::Load(
    std::shared_ptr<const ParsedImage> parsed) {
  const DriverApi& api = backend_.api();
  CUmodule module = nullptr;
  // std::string::c_str() gives the NUL terminator cuModuleLoadData needs for PTX.
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuModuleLoadData(&module, parsed->ptx.c_str()), "cuModuleLoadData"));
  absl::flat_hash_map<std::string, Kernel> kernels;
  for (const ptx::KernelSignature& signature : parsed->signatures) {
    Kernel kernel;
    const CUresult found =
        api.cuModuleGetFunction(&kernel.function, module, signature.name.c_str());
    if (found != CUDA_SUCCESS) {
      api.cuModuleUnload(module);
      return CheckCu(found, "cuModuleGetFunction");
    }
    kernel.signature = signature;
    kernels.emplace(signature.name, std::move(kernel));
  }
  TALLY_LOG_INFO("loaded a module ({}-byte fatbin, sm_{} PTX, {} kernel(s){})",
                 parsed->image.size(), parsed->ptx_arch, kernels.size(),
                 parsed->has_module_state ? ", per-client module state" : "");
  auto loaded = std::make_shared<SharedModule>(api, module, std::move(parsed), std::move(kernels));
  loaded_.push_back(loaded);
  return loaded;
}

}  // namespace tally::server
