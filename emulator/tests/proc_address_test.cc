// cuGetProcAddress answers from the version table; error names and the export-table probe.
#include <dlfcn.h>

#include <cstring>

// emu_library.h first: it includes cuda.h declaring every versioned driver symbol.
#include "emulator/tests/emu_library.h"

#include "cuda_abi/driver_proc_table.h"

namespace tally::emu::testing {
namespace {

void* Lookup(const char* symbol, int version, CUdriverProcAddressQueryResult* status = nullptr,
             CUresult expected = CUDA_SUCCESS, cuuint64_t flags = 0) {
  void* pfn = reinterpret_cast<void*>(1);
  CHECK(Emu().cuGetProcAddress_v2(symbol, &pfn, version, flags, status) == expected);
  return pfn;
}

void* Exported(const char* symbol) { return dlsym(Emu().library, symbol); }

// One row per table entry, checked in a loop (as client/abi_test.cc: a block of checks per entry
// is slow to compile).
constexpr tally::DriverProcNames kDriverTable[] = {
#define TALLY_DRIVER_API TALLY_DRIVER_PROC_NAMES
#include "emulator/driver_api.def"
};

TEST_CASE("every table entry resolves at its own version to its exported symbol") {
  for (const tally::DriverProcNames& entry : kDriverTable) {
    INFO(entry.name << " v" << entry.version);
    CUdriverProcAddressQueryResult status;
    CHECK(Lookup(entry.name, entry.version, &status) == Exported(entry.symbol));
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
  }
}

TEST_CASE("the highest version not above the requested one wins") {
  CHECK(Lookup("cuStreamDestroy", 3020) == Exported("cuStreamDestroy"));
  CHECK(Lookup("cuStreamDestroy", 4000) == Exported("cuStreamDestroy_v2"));
  CHECK(Lookup("cuCtxCreate", 11040) == Exported("cuCtxCreate_v2"));
  CHECK(Lookup("cuCtxCreate", 12050) == Exported("cuCtxCreate_v4"));
  CHECK(Lookup("cuCtxCreate", 13000) == Exported("cuCtxCreate_v4"));
  CHECK(Lookup("cuMemAlloc", 13000) == Exported("cuMemAlloc_v2"));
  CHECK(Lookup("cuGetProcAddress", 12000) == Exported("cuGetProcAddress_v2"));
}

TEST_CASE("per-thread default stream lookups answer the legacy-stream implementation") {
  CHECK(Lookup("cuMemcpyHtoD", 13000, nullptr, CUDA_SUCCESS,
               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) == Exported("cuMemcpyHtoD_v2"));
}

TEST_CASE("unknown symbols and too old versions are NOT_FOUND with the reason") {
  CUdriverProcAddressQueryResult status;
  CHECK(Lookup("cuLaunchHostFunc", 9000, &status, CUDA_ERROR_NOT_FOUND) == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(Lookup("cuNoSuchFunction", 13000, &status, CUDA_ERROR_NOT_FOUND) == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  // A real driver function the emulator does not implement.
  CHECK(Lookup("cuGraphCreate", 13000, &status, CUDA_ERROR_NOT_FOUND) == nullptr);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

TEST_CASE("bad cuGetProcAddress arguments are INVALID_VALUE") {
  void* pfn = nullptr;
  CHECK(Emu().cuGetProcAddress_v2(nullptr, &pfn, 13000, 0, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuGetProcAddress_v2("cuInit", nullptr, 13000, 0, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuGetProcAddress_v2("cuInit", &pfn, 13000, 1ull << 40, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuGetProcAddress("cuInit", &pfn, 13000, 0) == CUDA_SUCCESS);
  CHECK(pfn == Exported("cuInit"));
}

TEST_CASE("error names and strings come from cuda.h; unknown codes are INVALID_VALUE") {
  const char* text = nullptr;
  REQUIRE(Emu().cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &text) == CUDA_SUCCESS);
  CHECK(std::strcmp(text, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0);
  REQUIRE(Emu().cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text) == CUDA_SUCCESS);
  CHECK(std::strstr(text, "parameters") != nullptr);
  CHECK(Emu().cuGetErrorName(static_cast<CUresult>(12345), &text) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuGetErrorString(CUDA_SUCCESS, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("cuGetExportTable is NOT_SUPPORTED") {
  const void* table = &table;
  CUuuid id{};
  CHECK(Emu().cuGetExportTable(&table, &id) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(table == nullptr);
}

}  // namespace
}  // namespace tally::emu::testing
