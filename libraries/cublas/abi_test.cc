// The cuBLAS and cuBLASLt stand-ins as an application's loader sees them: they answer to
// libcublas.so.13 and libcublasLt.so.13 (the first needing the second, found beside it), export
// every status-returning function of NVIDIA's under those symbol versions (the unimplemented ones
// answering CUBLAS_STATUS_NOT_SUPPORTED), and fail bad handles with the documented status, never
// a crash. No server runs here: TALLY_SERVER names a socket nobody listens on.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "libraries/abi_test_support.h"

namespace tally::libraries {
namespace {

constexpr char kVersion[] = "libcublas.so.13";

void* StandIn() {
  static void* handle = abi_test::LoadStandIn(TALLY_TEST_CLIENT_LIBRARY, TALLY_TEST_CUBLAS_LIBRARY);
  return handle;
}

template <typename Fn>
Fn* Get(const char* name) {
  return abi_test::Get<Fn>(StandIn(), name, kVersion);
}

#define STAND_IN(name) Get<decltype(name)>(#name)

TEST_CASE("the stand-in answers to libcublas.so.13") {
  // DT_NEEDED entries match loaded objects by soname.
  StandIn();
  void* as_cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  CHECK(as_cublas == StandIn());
  if (as_cublas != nullptr) dlclose(as_cublas);
}

TEST_CASE("every status-returning libcublas export exists with its symbol version") {
  int missing = 0;
#define TALLY_LIBRARY_EXPORT(name) \
  if (dlvsym(StandIn(), #name, kVersion) == nullptr) ++missing;
#include "libraries/cublas/cublas_exports.def"
  CHECK(missing == 0);
  // Of the value-returning ones, those implemented.
  for (const char* name :
       {"cublasGetStatusName", "cublasGetStatusString", "cublasGetCudartVersion"}) {
    INFO(name);
    CHECK(dlvsym(StandIn(), name, kVersion) != nullptr);
  }
  // Nothing of the stand-in's own (abseil, fmt, its namespaces) is visible.
  CHECK(dlsym(StandIn(), "_ZN5tally9libraries10FromLaunchE9cudaError") == nullptr);
}

TEST_CASE("libcublasLt.so.13 comes with it and exports every cuBLASLt function") {
  StandIn();
  void* lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(lt != nullptr);
  int missing = 0;
#define TALLY_LIBRARY_EXPORT(name) \
  if (dlvsym(lt, #name, "libcublasLt.so.13") == nullptr) ++missing;
#define TALLY_LIBRARY_VALUE_EXPORT(name) TALLY_LIBRARY_EXPORT(name)
#include "libraries/cublaslt/cublaslt_exports.def"
  CHECK(missing == 0);
  // Its handle registry is the cuBLAS stand-in's, and nothing of cuBLAS's API is in it.
  CHECK(dlvsym(lt, "tally_blas_handle_find", "TALLY_PRIVATE") != nullptr);
  CHECK(dlvsym(lt, "cublasCreate_v2", "libcublasLt.so.13") == nullptr);
  auto* create =
      reinterpret_cast<decltype(cublasLtCreate)*>(dlvsym(lt, "cublasLtCreate", "libcublasLt.so.13"));
  REQUIRE(create != nullptr);
  CHECK(create(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  dlclose(lt);
}

TEST_CASE("an unimplemented function answers CUBLAS_STATUS_NOT_SUPPORTED") {
  auto* sgbmv = STAND_IN(cublasSgbmv_v2);
  float one = 1;
  CHECK(sgbmv(nullptr, CUBLAS_OP_N, 1, 1, 0, 0, &one, nullptr, 1, nullptr, 1, &one, nullptr, 1) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
}

TEST_CASE("bad handles and arguments get the documented statuses, without a server") {
  CHECK(STAND_IN(cublasCreate_v2)(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  cublasHandle_t handle = nullptr;
  // No server: no device memory for the handle.
  CHECK(STAND_IN(cublasCreate_v2)(&handle) == CUBLAS_STATUS_ALLOC_FAILED);
  CHECK(STAND_IN(cublasDestroy_v2)(nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  auto* foreign = reinterpret_cast<cublasHandle_t>(&handle);
  CHECK(STAND_IN(cublasSetStream_v2)(foreign, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  float one = 1;
  CHECK(STAND_IN(cublasSgemm_v2)(foreign, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, nullptr, 1,
                                 nullptr, 1, &one, nullptr, 1) == CUBLAS_STATUS_NOT_INITIALIZED);
  int value = 0;
  CHECK(STAND_IN(cublasGetProperty)(MAJOR_VERSION, &value) == CUBLAS_STATUS_SUCCESS);
  CHECK(value == CUBLAS_VER_MAJOR);
  CHECK(STAND_IN(cublasGetProperty)(static_cast<libraryPropertyType>(99), &value) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(std::string(STAND_IN(cublasGetStatusName)(CUBLAS_STATUS_NOT_SUPPORTED)) ==
        "CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK(std::string(STAND_IN(cublasGetStatusName)(static_cast<cublasStatus_t>(1234))) ==
        "CUBLAS_STATUS_UNKNOWN");
}

}  // namespace
}  // namespace tally::libraries
