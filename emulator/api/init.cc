// Exports: cuInit, cuDriverGetVersion, cuGetErrorName/String, cuGetExportTable, and the library
// teardown that makes later calls answer CUDA_ERROR_DEINITIALIZED.
#include <cuda.h>

#include "cuda_abi/cu_result_table.h"
#include "emulator/internal/entry.h"

namespace tally::emu {
namespace {

// The CUDA version whose driver API we implement (cuDriverGetVersion: 1000 * major + 10 * minor).
constexpr int kDriverVersion = 13000;

// Runs when the library is unloaded or the process exits: stops every stream worker while the
// memory they use still exists. A static object rather than a destructor function because its
// destructor is registered with __cxa_atexit when the library loads, so it runs before the
// atexit handlers of code loaded earlier, which then see CUDA_ERROR_DEINITIALIZED.
struct DriverTeardown {
  ~DriverTeardown() { Driver::Shutdown(); }
} g_driver_teardown;

}  // namespace
}  // namespace tally::emu

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::RunAnyState;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  return RunAnyState([&] { return Driver::Initialize(Flags); });
}

CUresult cuDriverGetVersion(int* driverVersion) {
  return RunAnyState([&] {
    TALLY_RETURN_IF_ERROR(CheckOut(driverVersion));
    *driverVersion = tally::emu::kDriverVersion;
    return absl::OkStatus();
  });
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  return RunAnyState([&] {
    TALLY_RETURN_IF_ERROR(CheckOut(pStr));
    *pStr = tally::CuResultName(error);
    if (*pStr == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown CUresult");
    return absl::OkStatus();
  });
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return RunAnyState([&] {
    TALLY_RETURN_IF_ERROR(CheckOut(pStr));
    *pStr = tally::CuResultDescription(error);
    if (*pStr == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown CUresult");
    return absl::OkStatus();
  });
}

// NVIDIA's private export tables have no documented contents; answering NOT_SUPPORTED (instead
// of lacking the symbol) is what lets NVRTC and cudart probe this library without crashing.
CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  (void)pExportTableId;
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // extern "C"
