// Exports cuGetProcAddress (CUDA 11.3 and 12+ forms), answering from driver_api.def with the
// lookup every driver implementation shares (cuda_abi/driver_proc_table.h).
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every versioned symbol under its own name
// (cuStreamDestroy and cuStreamDestroy_v2) instead of mapping names to the newest variant.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include "cuda_abi/driver_proc_table.h"
#include "emulator/internal/entry.h"

namespace tally::emu {
namespace {

#define TALLY_DRIVER_API TALLY_DRIVER_PROC_CHECK
#include "emulator/driver_api.def"

const DriverProc kProcTable[] = {
#define TALLY_DRIVER_API TALLY_DRIVER_PROC_ENTRY
#include "emulator/driver_api.def"
};

}  // namespace
}  // namespace tally::emu

extern "C" {

// Works before cuInit: the CUDA runtime obtains cuInit itself through this function.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return tally::emu::RunAnyState([&] {
    const CUresult result = tally::LookUpDriverProc(tally::emu::kProcTable, symbol, pfn,
                                                    cudaVersion, flags, symbolStatus);
    if (result == CUDA_SUCCESS) return absl::OkStatus();
    return tally::emu::CudaError(
        result, std::string("cuGetProcAddress(") + (symbol != nullptr ? symbol : "null") + ")");
  });
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
