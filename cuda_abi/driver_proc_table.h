// cuGetProcAddress over a declarative table, for every implementation of the driver API (the
// emulator and the client shim). Each implementation lists its entry points in a .def file of
// TALLY_DRIVER_API(name, version, symbol) lines: cuGetProcAddress(name, cudaVersion) answers the
// exported `symbol` of the highest `version` not above cudaVersion, and `symbol` must have
// exactly the type cudaTypedefs.h gives that version (PFN_<name>_v<version>), checked at compile
// time by expanding the table with TALLY_DRIVER_PROC_CHECK.
#pragma once

#include <cuda.h>

#include <cstring>
#include <span>
#include <type_traits>

namespace tally {

struct DriverProc {
  const char* name;
  int version;
  void* function;
};

// `#define TALLY_DRIVER_API TALLY_DRIVER_PROC_CHECK` then include the table (after
// cudaTypedefs.h, with __CUDA_API_VERSION_INTERNAL so that cuda.h declares every variant).
#define TALLY_DRIVER_PROC_CHECK(name, version, symbol)                        \
  static_assert(std::is_same_v<PFN_##name##_v##version, decltype(&::symbol)>, \
                #symbol " does not match PFN_" #name "_v" #version);
// `#define TALLY_DRIVER_API TALLY_DRIVER_PROC_ENTRY` inside a DriverProc array initializer.
#define TALLY_DRIVER_PROC_ENTRY(name, version, symbol) \
  ::tally::DriverProc{#name, version, reinterpret_cast<void*>(&::symbol)},

// A table entry by names only, for tests that look the symbols up in a loaded library:
// `#define TALLY_DRIVER_API TALLY_DRIVER_PROC_NAMES` inside a DriverProcNames array initializer.
struct DriverProcNames {
  const char* name;
  int version;
  const char* symbol;
};
#define TALLY_DRIVER_PROC_NAMES(name, version, symbol) \
  ::tally::DriverProcNames{#name, version, #symbol},

// cuGetProcAddress_v2 (CUDA Driver API, "Driver Entry Point Access"): CUDA_ERROR_NOT_FOUND with
// *symbol_status saying whether the name is unknown or only newer than `cuda_version`.
// Per-thread default stream lookups answer the same function: the callers' streams treat
// CU_STREAM_PER_THREAD like the legacy default stream, which only adds ordering.
inline CUresult LookUpDriverProc(std::span<const DriverProc> table, const char* symbol, void** pfn,
                                 int cuda_version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult* symbol_status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnownFlags =
      CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const DriverProc* best = nullptr;
  bool known = false;
  for (const DriverProc& entry : table) {
    if (std::strcmp(entry.name, symbol) != 0) continue;
    known = true;
    if (entry.version <= cuda_version && (best == nullptr || entry.version > best->version)) {
      best = &entry;
    }
  }
  if (symbol_status != nullptr) {
    *symbol_status = best != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
                     : known         ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                     : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  if (best == nullptr) return CUDA_ERROR_NOT_FOUND;
  *pfn = best->function;
  return CUDA_SUCCESS;
}

}  // namespace tally
