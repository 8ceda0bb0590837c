// Reaches the driver the way frameworks do: dlopen("libcuda.so.1"), dlsym of cuGetProcAddress,
// and every other entry point through cuGetProcAddress with the CUDA version the caller was
// written against (CUDA Driver API, "Driver Entry Point Access"). Checks that the versions pick
// the right exports, then runs a PTX kernel through the entry points it obtained. Also checks
// the shim's dlopen/dlsym interposition (client/driver_interposer.cc).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"

namespace {

PFN_cuGetProcAddress_v12000 get_proc = nullptr;
void* driver = nullptr;

// The entry point `name` as a caller written for CUDA `version` gets it.
template <typename Pfn>
Pfn Get(const char* name, int version) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status;
  const CUresult result = get_proc(name, &function, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || function == nullptr) {
    std::fprintf(stderr, "cuGetProcAddress(%s, %d) failed: %d, status %d\n", name, version,
                 static_cast<int>(result), static_cast<int>(status));
    std::exit(1);
  }
  return reinterpret_cast<Pfn>(function);
}

#define GET(name, version) Get<PFN_##name##_v##version>(#name, version)
#define CHECK_CU(call) EXPECT((call) == CUDA_SUCCESS)

void TestVersions() {
  // The newest variant not newer than the caller's CUDA version, as libcuda exports it.
  // (cudaTypedefs.h types the legacy cuStreamDestroy only for the driver's own build; the
  // signature is the same.)
  EXPECT(reinterpret_cast<void*>(Get<PFN_cuStreamDestroy_v4000>("cuStreamDestroy", 2000)) ==
         dlsym(driver, "cuStreamDestroy"));
  EXPECT(reinterpret_cast<void*>(Get<PFN_cuStreamDestroy_v4000>("cuStreamDestroy", 11000)) ==
         dlsym(driver, "cuStreamDestroy_v2"));
  EXPECT(reinterpret_cast<void*>(Get<PFN_cuCtxCreate_v3020>("cuCtxCreate", 11040)) ==
         dlsym(driver, "cuCtxCreate_v2"));
  EXPECT(reinterpret_cast<void*>(GET(cuCtxCreate, 12050)) == dlsym(driver, "cuCtxCreate_v4"));
  EXPECT(reinterpret_cast<void*>(Get<PFN_cuMemAlloc_v3020>("cuMemAlloc", 13000)) ==
         dlsym(driver, "cuMemAlloc_v2"));
  EXPECT(reinterpret_cast<void*>(GET(cuInit, 2000)) == dlsym(driver, "cuInit"));

  void* function = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status;
  EXPECT(get_proc("cuCtxCreate", &function, 1000, 0, &status) == CUDA_ERROR_NOT_FOUND);
  EXPECT(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && function == nullptr);
  EXPECT(get_proc("cuNoSuchFunction", &function, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND);
  EXPECT(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT(get_proc("cuInit", &function, 13000, 1u << 20, &status) == CUDA_ERROR_INVALID_VALUE);

  const void* table = nullptr;
  CUuuid id{};
  EXPECT(GET(cuGetExportTable, 3000)(&table, &id) == CUDA_ERROR_NOT_SUPPORTED);
  const char* name = nullptr;
  CHECK_CU(GET(cuGetErrorName, 6000)(CUDA_ERROR_INVALID_VALUE, &name));
  EXPECT(std::strcmp(name, "CUDA_ERROR_INVALID_VALUE") == 0);
}

void TestKernel() {
  CHECK_CU(GET(cuInit, 2000)(0));
  CUdevice device;
  CHECK_CU(GET(cuDeviceGet, 2000)(&device, 0));
  CUcontext context;
  CHECK_CU(GET(cuDevicePrimaryCtxRetain, 7000)(&context, device));
  CHECK_CU(GET(cuCtxSetCurrent, 4000)(context));

  constexpr unsigned kN = 300;
  CUdeviceptr data;
  CHECK_CU(Get<PFN_cuMemAlloc_v3020>("cuMemAlloc", 12000)(&data, kN * sizeof(unsigned)));
  CUstream stream;
  CHECK_CU(GET(cuStreamCreate, 2000)(&stream, CU_STREAM_DEFAULT));
  CHECK_CU(Get<PFN_cuMemsetD32Async_v3020>("cuMemsetD32Async", 12000)(data, 41, kN, stream));

  CUmodule module;
  CHECK_CU(GET(cuModuleLoadData, 2000)(&module, kAddOnePtx));
  CUfunction add_one;
  CHECK_CU(GET(cuModuleGetFunction, 2000)(&add_one, module, "add_one"));
  unsigned n = kN;
  void* params[] = {&data, &n};
  CHECK_CU(GET(cuLaunchKernel, 4000)(add_one, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params,
                                     nullptr));
  CHECK_CU(GET(cuStreamSynchronize, 2000)(stream));

  std::vector<unsigned> result(kN);
  CHECK_CU(Get<PFN_cuMemcpyDtoH_v3020>("cuMemcpyDtoH", 12000)(result.data(), data,
                                                              kN * sizeof(unsigned)));
  for (unsigned value : result) EXPECT(value == 42);

  CHECK_CU(GET(cuModuleUnload, 2000)(module));
  CHECK_CU(Get<PFN_cuStreamDestroy_v4000>("cuStreamDestroy", 12000)(stream));
  CHECK_CU(Get<PFN_cuMemFree_v3020>("cuMemFree", 12000)(data));
  CHECK_CU(Get<PFN_cuDevicePrimaryCtxRelease_v11000>("cuDevicePrimaryCtxRelease", 12000)(device));
}

}  // namespace

int main() {
  driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    std::fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  // The shim interposes dlopen: the driver library by any path is the shim, also where no such
  // file exists (a machine whose driver lives elsewhere, or none).
  void* by_path = dlopen("/nonexistent/lib/libcuda.so.1", RTLD_NOW);
  EXPECT(by_path == driver);
  dlclose(by_path);
  // ... and forwards other calls with the program as the caller: RTLD_NEXT searches the objects
  // after the program, the first of which is the preloaded shim.
  EXPECT(dlsym(RTLD_NEXT, "cudaMalloc") != nullptr);
  EXPECT(dlopen("libdoes-not-exist.so", RTLD_NOW) == nullptr);

  get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver, "cuGetProcAddress_v2"));
  EXPECT(get_proc != nullptr);
  TestVersions();
  TestKernel();
  dlclose(driver);
  std::printf("driver_dlopen: OK\n");
  return 0;
}
