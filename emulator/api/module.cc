// Exports module and function entry points: cuModuleLoadData[Ex], cuModuleUnload,
// cuModuleGetFunction, cuModuleGetGlobal, cuFuncGetAttribute/SetAttribute, cuFuncGetParamInfo.
#include <cuda.h>
#include <fmt/format.h>

#include "emulator/exec/occupancy.h"
#include "emulator/internal/entry.h"
#include "emulator/internal/jit_log.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Kernel;
using tally::emu::Run;

namespace tally::emu {
namespace {

absl::Status LoadModule(Driver& driver, CUmodule* out, const void* image) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
  uint32_t arch = driver.config().cc_major * 10 + driver.config().cc_minor;
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Module> module,
                         Module::Load(image, driver.memory(), context->id(), arch));
  auto entry = std::make_shared<ModuleEntry>();
  entry->module = module;
  for (const exec::Function& function : module->functions()) {
    auto kernel = std::make_shared<Kernel>();
    kernel->module = module;
    kernel->function = &function;
    kernel->max_dynamic_shared = static_cast<int>(exec::kDefaultSharedPerBlock) -
                                 static_cast<int>(function.static_shared_bytes);
    entry->kernels[function.name] = driver.kernels().Insert(std::move(kernel));
  }
  *out = driver.modules().Insert(std::move(entry));
  return absl::OkStatus();
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return Run([&](Driver& driver) { return tally::emu::LoadModule(driver, module, image); });
}

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  return Run([&](Driver& driver) {
    absl::Status status = tally::emu::LoadModule(driver, module, image);
    // CU_JIT_ERROR_LOG_BUFFER receives the reason a load failed (CUDA Driver API, CUjit_option).
    if (!status.ok()) {
      tally::emu::JitErrorLog(numOptions, options, optionValues)
          .Write(std::string(status.message()));
    }
    return status;
  });
}

CUresult cuModuleUnload(CUmodule hmod) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(auto entry, driver.modules().Remove(hmod));
    // Launches already queued keep the module alive until they ran.
    driver.kernels().RemoveIf([&](const Kernel& kernel) { return kernel.module == entry->module; });
    return absl::OkStatus();
  });
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(hfunc));
    if (name == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null name");
    TALLY_ASSIGN_OR_RETURN(auto entry, driver.modules().Lookup(hmod));
    auto it = entry->kernels.find(name);
    if (it == entry->kernels.end()) {
      return CudaError(CUDA_ERROR_NOT_FOUND, std::string("no kernel named ") + name);
    }
    *hfunc = it->second;
    return absl::OkStatus();
  });
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  return Run([&](Driver& driver) -> absl::Status {
    if (name == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null name");
    TALLY_ASSIGN_OR_RETURN(auto entry, driver.modules().Lookup(hmod));
    const auto& globals = entry->module->globals();
    auto it = globals.find(name);
    if (it == globals.end()) {
      return CudaError(CUDA_ERROR_NOT_FOUND, std::string("no global named ") + name);
    }
    if (dptr != nullptr) *dptr = it->second.address;
    if (bytes != nullptr) *bytes = it->second.size;
    return absl::OkStatus();
  });
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pi));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(hfunc));
    const tally::emu::exec::Function& f = *kernel->function;
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = static_cast<int>(f.max_threads);
        break;
      case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *pi = static_cast<int>(f.static_shared_bytes);
        break;
      case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        *pi = static_cast<int>(f.local_bytes);
        break;
      // Registers are unlimited in the emulator; report what a typical sm_80 kernel uses.
      case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *pi = 32;
        break;
      case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        *pi = static_cast<int>(kernel->module->ptx_version());
        break;
      case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *pi = driver.config().cc_major * 10 + driver.config().cc_minor;
        break;
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *pi = kernel->max_dynamic_shared;
        break;
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *pi = kernel->shared_carveout;
        break;
      // Cluster properties: .reqnctapercluster (0 without), .explicitcluster.
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *pi = static_cast<int>(f.required_cluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH]);
        break;
      case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *pi = f.explicit_cluster ? 1 : 0;
        break;
      case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *pi = kernel->non_portable_cluster ? 1 : 0;
        break;
      default:
        if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) {
          return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown function attribute");
        }
        *pi = 0;  // constant memory, the cluster scheduling policy (default): none
    }
    return absl::OkStatus();
  });
}

// "paramIndex must be less than the number of parameters that func takes" (CUDA Driver API,
// cuFuncGetParamInfo): CUDA_ERROR_INVALID_VALUE past the last, which is how callers count them.
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                            size_t* paramSize) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(paramOffset));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(func));
    const auto& layout = kernel->function->param_layout;
    if (paramIndex >= layout.size()) {
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       fmt::format("the kernel has {} parameters", layout.size()));
    }
    *paramOffset = layout[paramIndex].first;
    if (paramSize != nullptr) *paramSize = layout[paramIndex].second;
    return absl::OkStatus();
  });
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, driver.UsableKernel(hfunc));
    int static_shared = static_cast<int>(kernel->function->static_shared_bytes);
    switch (attrib) {
      case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (value < 0 ||
            value > static_cast<int>(tally::emu::exec::kOptInSharedPerBlock) - static_shared) {
          return CudaError(CUDA_ERROR_INVALID_VALUE, "more shared memory than a block can have");
        }
        kernel->max_dynamic_shared = value;
        return absl::OkStatus();
      case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (value < -1 || value > 100) return CudaError(CUDA_ERROR_INVALID_VALUE, "bad carveout");
        kernel->shared_carveout = value;
        return absl::OkStatus();
      case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        if (value != 0 && value != 1) return CudaError(CUDA_ERROR_INVALID_VALUE, "not 0 or 1");
        kernel->non_portable_cluster = value == 1;
        return absl::OkStatus();
      default:
        return CudaError(CUDA_ERROR_INVALID_VALUE, "attribute is read-only or unknown");
    }
  });
}

}  // extern "C"
