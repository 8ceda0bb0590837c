// Exports Tally's extensions of the driver API (cuda_abi/driver_extensions.h).
#include "emulator/exec/resident_unit.h"
#include "emulator/internal/entry.h"
#include "cuda_abi/driver_extensions.h"

using tally::emu::Driver;
using tally::emu::Run;

extern "C" unsigned long long tallyEmuLaneInstructions(void) {
  return tally::emu::exec::LaneInstructions();
}

extern "C" CUresult tallyEmuStreamCancel(CUstream stream) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<tally::emu::Stream> found,
                           driver.streams().Lookup(stream));
    found->Cancel();
    return absl::OkStatus();
  });
}

extern "C" CUresult tallyEmuStreamSetTenant(CUstream stream, unsigned long long tenant) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<tally::emu::Stream> found,
                           driver.streams().Lookup(stream));
    found->set_tenant(tenant);
    return absl::OkStatus();
  });
}

extern "C" CUresult tallyEmuMemSetTenant(CUdeviceptr base, unsigned long long tenant) {
  return Run([&](Driver& driver) { return driver.memory().SetTenant(base, tenant); });
}

extern "C" CUresult tallyEmuModuleSetTenant(CUmodule module, unsigned long long tenant) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<tally::emu::ModuleEntry> found,
                           driver.modules().Lookup(module));
    return found->module->SetTenant(tenant);
  });
}

extern "C" CUresult tallyEmuTenantGetError(unsigned long long tenant) {
  return Run([&](Driver& driver) -> absl::Status {
    const CUresult fault = driver.tenant_faults().Error(tenant);
    if (fault == CUDA_SUCCESS) return absl::OkStatus();
    return tally::emu::CudaError(fault, "the tenant's asynchronous work failed");
  });
}

extern "C" CUresult tallyEmuTenantTakeOutput(unsigned long long tenant, int* stream, char* buffer,
                                             size_t capacity, size_t* size) {
  return Run([&](Driver& driver) -> absl::Status {
    if (stream == nullptr || size == nullptr || (buffer == nullptr && capacity > 0)) {
      return tally::emu::CudaError(CUDA_ERROR_INVALID_VALUE, "a null argument");
    }
    tally::emu::TenantOutput::Stream which{};
    *size = driver.tenant_output().Take(tenant, &which, buffer, capacity);
    *stream = static_cast<int>(which);
    return absl::OkStatus();
  });
}
