// Exports cuGetProcAddress (CUDA 11.3 and 12+ forms), answering from driver_api.def: the entry
// with the highest version not above the caller's requested CUDA version.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every versioned symbol under its own name
// (cuStreamDestroy and cuStreamDestroy_v2) instead of mapping names to the newest variant.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <type_traits>

#include "emulator/internal/entry.h"

namespace tally::emu {
namespace {

// Every table entry's exported symbol has exactly the type cudaTypedefs.h gives that version.
#define TALLY_DRIVER_API(name, version, symbol)                               \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::symbol)>, \
                #symbol " does not match PFN_" #name "_v" #version);
#include "emulator/driver_api.def"

struct ProcEntry {
  const char* name;
  int version;
  void* function;
};

const ProcEntry kProcTable[] = {
#define TALLY_DRIVER_API(name, version, symbol) \
  {#name, version, reinterpret_cast<void*>(&::symbol)},
#include "emulator/driver_api.def"
};

absl::Status GetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult* symbol_status) {
  if (symbol == nullptr || pfn == nullptr) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "null symbol or pfn");
  }
  // Per-thread default stream variants resolve to the legacy-stream implementation: the
  // emulator runs CU_STREAM_PER_THREAD with legacy semantics, which only adds ordering.
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown flags");
  *pfn = nullptr;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const ProcEntry& entry : kProcTable) {
    if (std::strcmp(entry.name, symbol) != 0) continue;
    known = true;
    if (entry.version <= cuda_version && (best == nullptr || entry.version > best->version)) {
      best = &entry;
    }
  }
  CUdriverProcAddressQueryResult result = best != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
                                          : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                                  : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol_status != nullptr) *symbol_status = result;
  if (best == nullptr) {
    return CudaError(CUDA_ERROR_NOT_FOUND, std::string("no entry point for ") + symbol);
  }
  *pfn = best->function;
  return absl::OkStatus();
}

}  // namespace
}  // namespace tally::emu

extern "C" {

// Works before cuInit: the CUDA runtime obtains cuInit itself through this function.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return tally::emu::RunAnyState(
      [&] { return tally::emu::GetProcAddress(symbol, pfn, cudaVersion, flags, symbolStatus); });
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
