// The shim as an application's loader sees it: it answers to libcudart.so.13, exports every
// libcudart function under that symbol version and every libcuda function under its plain name,
// fails unsupported and invalid calls with CUDA error codes (never a crash or an exception), and
// keeps the per-thread last error. cuGetProcAddress answers its table. No server runs here:
// TALLY_SERVER names a socket nobody listens on.
//
// __CUDA_API_VERSION_INTERNAL: cuda.h and cudaTypedefs.h declare every versioned driver symbol.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_abi/driver_proc_table.h"

namespace {

constexpr char kVersion[] = "libcudart.so.13";

void* Shim() {
  static void* handle = [] {
    setenv("TALLY_SERVER", "/nonexistent/tally-abi-test.sock", 1);
    return dlopen(TALLY_TEST_CLIENT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  }();
  REQUIRE(handle != nullptr);
  return handle;
}

template <typename Fn>
Fn* Get(const char* name) {
  void* symbol = dlvsym(Shim(), name, kVersion);
  INFO(name);
  REQUIRE(symbol != nullptr);
  return reinterpret_cast<Fn*>(symbol);
}

#define SHIM(name) Get<decltype(name)>(#name)

TEST_CASE("the shim stands in for libcudart.so.13") {
  // DT_NEEDED entries match loaded objects by soname: an application's libcudart.so.13 resolves
  // to the preloaded shim.
  Shim();
  void* as_cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  CHECK(as_cudart == Shim());
  if (as_cudart != nullptr) dlclose(as_cudart);
}

TEST_CASE("the library stand-ins' call marks are exported under TALLY_PRIVATE only") {
  for (const char* name :
       {"tally_library_call_begin", "tally_library_call_end", "tally_vendor_libraries",
        "tally_vendor_gemm", "tally_vendor_lt_matmul"}) {
    INFO(name);
    CHECK(dlvsym(Shim(), name, "TALLY_PRIVATE") != nullptr);
    CHECK(dlvsym(Shim(), name, kVersion) == nullptr);
  }
}

TEST_CASE("every libcudart export exists with its symbol version") {
  int missing = 0;
  // Those returning a value (not an error code) have no stub: they exist only if implemented.
#define TALLY_LIBRARY_EXPORT(name) \
  if (dlvsym(Shim(), #name, kVersion) == nullptr) ++missing;
#define TALLY_LIBRARY_VALUE_EXPORT(name) TALLY_LIBRARY_EXPORT(name)
#include "client/cudart_exports.def"
  CHECK(missing == 0);
}

TEST_CASE("cudaCreateChannelDesc returns its struct") {
  const cudaChannelFormatDesc desc =
      SHIM(cudaCreateChannelDesc)(32, 8, 0, 0, cudaChannelFormatKindFloat);
  CHECK(desc.x == 32);
  CHECK(desc.y == 8);
  CHECK(desc.z == 0);
  CHECK(desc.w == 0);
  CHECK(desc.f == cudaChannelFormatKindFloat);
}

TEST_CASE("unsupported calls return cudaErrorNotSupported") {
  // Peer copies are not implemented (one device per server); the stub ignores its arguments.
  CHECK(SHIM(cudaMemcpy3DPeer)(nullptr) == cudaErrorNotSupported);
}

TEST_CASE("without a server, calls fail with CUDA errors and the last error is kept") {
  int count = -1;
  CHECK(SHIM(cudaGetDeviceCount)(&count) == cudaErrorNoDevice);
  CHECK(count == 0);
  void* pointer = nullptr;
  CHECK(SHIM(cudaMalloc)(&pointer, 64) == cudaErrorDevicesUnavailable);
  CHECK(SHIM(cudaPeekAtLastError)() == cudaErrorDevicesUnavailable);
  CHECK(SHIM(cudaGetLastError)() == cudaErrorDevicesUnavailable);
  CHECK(SHIM(cudaGetLastError)() == cudaSuccess);
  CHECK(SHIM(cudaDeviceSynchronize)() == cudaErrorDevicesUnavailable);
  SHIM(cudaGetLastError)();
}

TEST_CASE("invalid arguments are refused before anything is sent") {
  CHECK(SHIM(cudaMalloc)(nullptr, 64) == cudaErrorInvalidValue);
  CHECK(SHIM(cudaGetDevice)(nullptr) == cudaErrorInvalidValue);
  CHECK(SHIM(cudaSetDevice)(1) == cudaErrorInvalidDevice);
  CHECK(SHIM(cudaEventElapsedTime)(nullptr, nullptr, nullptr) == cudaErrorInvalidValue);
  int device = -1;
  CHECK(SHIM(cudaGetDevice)(&device) == cudaSuccess);
  CHECK(device == 0);
  // Host-to-host copies never need the server.
  int a = 7, b = 0;
  CHECK(SHIM(cudaMemcpy)(&b, &a, sizeof(a), cudaMemcpyHostToHost) == cudaSuccess);
  CHECK(b == 7);
  SHIM(cudaGetLastError)();
}

TEST_CASE("error names and descriptions come from driver_types.h") {
  CHECK(std::string(SHIM(cudaGetErrorName)(cudaErrorInvalidValue)) == "cudaErrorInvalidValue");
  CHECK(std::string(SHIM(cudaGetErrorName)(static_cast<cudaError_t>(123456))) ==
        "cudaErrorUnknown");
  CHECK(std::strlen(SHIM(cudaGetErrorString)(cudaErrorMemoryAllocation)) > 10);
  CHECK(std::string(SHIM(cudaGetErrorName)(cudaSuccess)) == "cudaSuccess");
}

// nvcc's ABI, declared as crt/host_runtime.h and crt/device_functions.h do.
using PushFn = unsigned(dim3, dim3, size_t, cudaStream_t);
using PopFn = cudaError_t(dim3*, dim3*, size_t*, void*);
using RegisterFatbinFn = void**(void*);
using RegisterFunctionFn = void(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*,
                                dim3*, int*);
using GetKernelFn = cudaError_t(cudaKernel_t*, const void*);
using LaunchKernelFn = cudaError_t(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);

TEST_CASE("<<<>>> configurations are pushed and popped per thread") {
  dim3 grid, block;
  size_t shared = 0;
  cudaStream_t stream = nullptr;
  CHECK(Get<PopFn>("__cudaPopCallConfiguration")(&grid, &block, &shared, &stream) ==
        cudaErrorMissingConfiguration);
  CHECK(Get<PushFn>("__cudaPushCallConfiguration")(dim3(4, 5), dim3(32), 128,
                                                   reinterpret_cast<cudaStream_t>(0x42)) == 0);
  CHECK(Get<PopFn>("__cudaPopCallConfiguration")(&grid, &block, &shared, &stream) == cudaSuccess);
  CHECK((grid.x == 4 && grid.y == 5 && grid.z == 1 && block.x == 32 && shared == 128));
  CHECK(stream == reinterpret_cast<cudaStream_t>(0x42));
  SHIM(cudaGetLastError)();
}

void HostStub() {}
void UnregisteredStub() {}

TEST_CASE("launching unregistered kernels or kernels of a corrupt fatbin fails cleanly") {
  void* args[1] = {nullptr};
  CHECK(SHIM(cudaLaunchKernel)(reinterpret_cast<const void*>(&UnregisteredStub), dim3(1), dim3(1),
                               args, 0, nullptr) == cudaErrorInvalidDeviceFunction);
  static const int garbage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  void** fatbin = Get<RegisterFatbinFn>("__cudaRegisterFatBinary")(const_cast<int*>(garbage));
  REQUIRE(fatbin != nullptr);
  Get<RegisterFunctionFn>("__cudaRegisterFunction")(
      fatbin, reinterpret_cast<const char*>(&HostStub), nullptr, "_Z8HostStubv", -1, nullptr,
      nullptr, nullptr, nullptr, nullptr);
  // The handle is the registered kernel's; the launch reports that its fatbin cannot load.
  cudaKernel_t kernel = nullptr;
  CHECK(Get<GetKernelFn>("__cudaGetKernel")(&kernel, reinterpret_cast<const void*>(&HostStub)) ==
        cudaSuccess);
  CHECK(kernel != nullptr);
  CHECK(Get<LaunchKernelFn>("__cudaLaunchKernel")(kernel, dim3(1), dim3(1), args, 0, nullptr) ==
        cudaErrorInvalidKernelImage);
  CHECK(SHIM(cudaLaunchKernel)(reinterpret_cast<const void*>(&HostStub), dim3(1), dim3(1), args, 0,
                               nullptr) == cudaErrorInvalidKernelImage);
  SHIM(cudaGetLastError)();
}

TEST_CASE("every libcuda export exists under its plain name") {
  int missing = 0;
#define TALLY_LIBRARY_EXPORT(name) \
  if (dlsym(Shim(), #name) == nullptr) ++missing;
#define TALLY_LIBRARY_VALUE_EXPORT(name) TALLY_LIBRARY_EXPORT(name)
#include "client/driver_exports.def"
  CHECK(missing == 0);
}

CUresult GetProc(const char* name, void** function, int version,
                 CUdriverProcAddressQueryResult* status = nullptr) {
  return SHIM(cuGetProcAddress_v2)(name, function, version, CU_GET_PROC_ADDRESS_DEFAULT, status);
}

// One row per table entry, checked in a loop (a block of checks per entry took gcc 13 to 40 s
// to compile).
constexpr tally::DriverProcNames kDriverTable[] = {
#define TALLY_DRIVER_API TALLY_DRIVER_PROC_NAMES
#include "client/driver_api.def"
};

TEST_CASE("cuGetProcAddress answers every table entry at its version with its export") {
  for (const tally::DriverProcNames& entry : kDriverTable) {
    INFO(entry.name << " v" << entry.version);
    void* function = nullptr;
    CUdriverProcAddressQueryResult status;
    CHECK(GetProc(entry.name, &function, entry.version, &status) == CUDA_SUCCESS);
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(function == dlsym(Shim(), entry.symbol));
  }
}

TEST_CASE("cuGetProcAddress picks the newest variant the caller's version knows") {
  void* function = nullptr;
  CHECK(GetProc("cuStreamDestroy", &function, 3020) == CUDA_SUCCESS);
  CHECK(function == dlsym(Shim(), "cuStreamDestroy"));
  CHECK(GetProc("cuStreamDestroy", &function, 13000) == CUDA_SUCCESS);
  CHECK(function == dlsym(Shim(), "cuStreamDestroy_v2"));
  CHECK(GetProc("cuCtxCreate", &function, 12040) == CUDA_SUCCESS);
  CHECK(function == dlsym(Shim(), "cuCtxCreate_v2"));
  CUdriverProcAddressQueryResult status;
  CHECK(GetProc("cuModuleLoadDataEx", &function, 2000, &status) == CUDA_ERROR_NOT_FOUND);
  CHECK((status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && function == nullptr));
  // A real driver function the shim does not implement is not offered.
  CHECK(GetProc("cuArrayCreate", &function, 13000, &status) == CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(SHIM(cuGetProcAddress_v2)(nullptr, &function, 13000, 0, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("driver calls need cuInit, which fails cleanly without a server") {
  CUdeviceptr address = 0;
  CHECK(SHIM(cuMemAlloc_v2)(&address, 64) == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(SHIM(cuInit)(1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(SHIM(cuInit)(0) == CUDA_ERROR_DEVICE_UNAVAILABLE);
  CHECK(SHIM(cuMemAlloc_v2)(&address, 64) == CUDA_ERROR_NOT_INITIALIZED);
  const void* table = reinterpret_cast<const void*>(1);
  CHECK(SHIM(cuGetExportTable)(&table, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(table == nullptr);
  // The weak stub of an unimplemented export ignores its arguments.
  CHECK(reinterpret_cast<CUresult (*)()>(dlsym(Shim(), "cuArrayCreate_v2"))() ==
        CUDA_ERROR_NOT_SUPPORTED);
  // The runtime's last error is the runtime's alone.
  CHECK(SHIM(cudaGetLastError)() == cudaSuccess);
}

TEST_CASE("driver error names and descriptions come from cuda.h") {
  const char* text = nullptr;
  CHECK(SHIM(cuGetErrorName)(CUDA_ERROR_INVALID_HANDLE, &text) == CUDA_SUCCESS);
  CHECK(std::string(text) == "CUDA_ERROR_INVALID_HANDLE");
  CHECK(SHIM(cuGetErrorString)(CUDA_ERROR_OUT_OF_MEMORY, &text) == CUDA_SUCCESS);
  CHECK(std::strlen(text) > 10);
  CHECK(SHIM(cuGetErrorName)(static_cast<CUresult>(123456), &text) == CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
