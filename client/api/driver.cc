// Driver API initialisation, error names and entry-point lookup. cuGetProcAddress answers from
// driver_api.def with the lookup the emulator shares (cuda_abi/driver_proc_table.h).
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every versioned symbol under its own name
// (cuGetProcAddress next to cuGetProcAddress_v2) instead of mapping names to the newest one.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <string>

#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/status.h"
#include "cuda_abi/cu_result_table.h"
#include "cuda_abi/driver_proc_table.h"
#include "common/log.h"
#include "common/status.h"

using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DriverError;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::DriverCallAnyState;

namespace tally::client {
namespace {

#define TALLY_DRIVER_API TALLY_DRIVER_PROC_CHECK
#include "client/driver_api.def"

const DriverProc kProcTable[] = {
#define TALLY_DRIVER_API TALLY_DRIVER_PROC_ENTRY
#include "client/driver_api.def"
};

// cudaGetDriverEntryPointByVersion (CUDA Runtime API, "Driver Entry Point Access"): the shim's
// driver functions, as cuGetProcAddress answers them; a symbol that is unknown, or only newer
// than `cuda_version`, is cudaSuccess with a null pointer and the reason in `status`.
absl::Status EntryPoint(const char* symbol, void** function, unsigned int cuda_version,
                        unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || function == nullptr) {
    return CudaError(cudaErrorInvalidValue, "a null symbol or result pointer");
  }
  // cudaEnableDefault/LegacyStream/PerThreadDefaultStream equal the CU_GET_PROC_ADDRESS_* flags,
  // and cudaDriverEntryPointQueryResult's values CUdriverProcAddressQueryResult's.
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult result = LookUpDriverProc(kProcTable, symbol, function,
                                           static_cast<int>(cuda_version), flags, &found);
  if (result == CUDA_ERROR_INVALID_VALUE) return CudaError(cudaErrorInvalidValue, "unknown flags");
  if (*function == nullptr) TALLY_LOG_DEBUG("tally: driver entry point {} is not provided", symbol);
  if (status != nullptr) *status = static_cast<cudaDriverEntryPointQueryResult>(found);
  return absl::OkStatus();
}

}  // namespace
}  // namespace tally::client

extern "C" {

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* status) {
  return RuntimeCall(__func__, [&] {
    return tally::client::EntryPoint(symbol, function, cudaVersion, flags, status);
  });
}

// The runtime's own version picks the driver functions (the documented behaviour).
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** function, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  return RuntimeCall(__func__, [&] {
    return tally::client::EntryPoint(symbol, function, CUDART_VERSION, flags, status);
  });
}

// Connects to the server: without one, the program learns it here (the error names the socket).
CUresult cuInit(unsigned int flags) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    if (flags != 0) return DriverError(CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0");
    return Channel::Get().status();
  });
}

// The server's driver (for the emulator, the CUDA version it implements).
CUresult cuDriverGetVersion(int* version) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(version));
    TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
    *version = channel->device().driver_version;
    return absl::OkStatus();
  });
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(name));
    *name = tally::CuResultName(error);
    if (*name == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUresult");
    return absl::OkStatus();
  });
}

CUresult cuGetErrorString(CUresult error, const char** description) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(description));
    *description = tally::CuResultDescription(error);
    if (*description == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUresult");
    return absl::OkStatus();
  });
}

// Works before cuInit (the CUDA runtime obtains cuInit itself through it).
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    const CUresult result = tally::LookUpDriverProc(tally::client::kProcTable, symbol, pfn,
                                                    cudaVersion, flags, symbolStatus);
    if (result == CUDA_SUCCESS) return absl::OkStatus();
    return DriverError(result, std::string("cuGetProcAddress(") +
                                   (symbol != nullptr ? symbol : "null") + ", " +
                                   std::to_string(cudaVersion) + ")");
  });
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

// NVIDIA's private interfaces (used by its own libraries, e.g. a statically linked cudart).
CUresult cuGetExportTable(const void** table, const CUuuid*) {
  return DriverCallAnyState(__func__, [&]() -> absl::Status {
    if (table != nullptr) *table = nullptr;
    return DriverError(CUDA_ERROR_NOT_SUPPORTED, "cuGetExportTable: no private export tables");
  });
}

}  // extern "C"
