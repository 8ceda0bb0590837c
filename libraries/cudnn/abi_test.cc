// The cuDNN stand-in as an application's loader sees it: it answers to libcudnn.so.9, exports
// every function of NVIDIA's libcudnn.so.9 under that symbol version (the unimplemented ones
// answering CUDNN_STATUS_NOT_SUPPORTED), and refuses bad handles and descriptors with the
// documented statuses, never a crash. No server runs here, and none of these calls needs one.
#include <cudnn.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "libraries/abi_test_support.h"

namespace tally::libraries {
namespace {

constexpr char kVersion[] = "libcudnn.so.9";

void* StandIn() {
  static void* handle = abi_test::LoadStandIn(TALLY_TEST_CLIENT_LIBRARY, TALLY_TEST_CUDNN_LIBRARY);
  return handle;
}

template <typename Fn>
Fn* Get(const char* name) {
  return abi_test::Get<Fn>(StandIn(), name, kVersion);
}

#define STAND_IN(name) Get<decltype(name)>(#name)

bool InCategory(cudnnStatus_t status, cudnnStatus_t category) {
  return status / 1000 == category / 1000;
}

TEST_CASE("the stand-in answers to libcudnn.so.9 and exports every cuDNN function") {
  // DT_NEEDED entries match loaded objects by soname.
  StandIn();
  void* as_cudnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
  CHECK(as_cudnn == StandIn());
  if (as_cudnn != nullptr) dlclose(as_cudnn);
  int missing = 0;
#define TALLY_LIBRARY_EXPORT(name) \
  if (dlvsym(StandIn(), #name, kVersion) == nullptr) ++missing;
#define TALLY_LIBRARY_VALUE_EXPORT(name) TALLY_LIBRARY_EXPORT(name)
#include "libraries/cudnn/cudnn_exports.def"
  CHECK(missing == 0);
  // Nothing of the stand-in's own (its namespaces, abseil, fmt) is visible.
  CHECK(dlsym(StandIn(), "_ZN5tally9libraries5cudnn10StatusNameE13cudnnStatus_t") == nullptr);
}

TEST_CASE("versions and status names") {
  CHECK(STAND_IN(cudnnGetVersion)() == CUDNN_VERSION);
  int major = 0;
  CHECK(STAND_IN(cudnnGetProperty)(MAJOR_VERSION, &major) == CUDNN_STATUS_SUCCESS);
  CHECK(major == CUDNN_MAJOR);
  CHECK(std::string(STAND_IN(cudnnGetErrorString)(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)) ==
        "CUDNN_STATUS_BAD_PARAM_NULL_POINTER");
  CHECK(std::string(STAND_IN(cudnnGetErrorString)(static_cast<cudnnStatus_t>(1234))) ==
        "CUDNN_STATUS_UNKNOWN");
}

TEST_CASE("an unimplemented function answers CUDNN_STATUS_NOT_SUPPORTED") {
  CHECK(STAND_IN(cudnnDestroyCTCLossDescriptor)(nullptr) == CUDNN_STATUS_NOT_SUPPORTED);
}

TEST_CASE("bad handles and descriptors get the documented statuses and a last error") {
  CHECK(InCategory(STAND_IN(cudnnCreate)(nullptr), CUDNN_STATUS_BAD_PARAM));
  cudnnHandle_t handle = nullptr;
  REQUIRE(STAND_IN(cudnnCreate)(&handle) == CUDNN_STATUS_SUCCESS);
  auto* foreign = reinterpret_cast<cudnnHandle_t>(&handle);
  CHECK(InCategory(STAND_IN(cudnnSetStream)(foreign, nullptr), CUDNN_STATUS_BAD_PARAM));
  char message[256] = {};
  STAND_IN(cudnnGetLastErrorString)(message, sizeof message);
  CHECK(std::string(message).find("cudnnSetStream") != std::string::npos);
  cudnnTensorDescriptor_t tensor = nullptr;
  REQUIRE(STAND_IN(cudnnCreateTensorDescriptor)(&tensor) == CUDNN_STATUS_SUCCESS);
  // Used before it is set.
  size_t bytes = 0;
  CHECK(STAND_IN(cudnnGetTensorSizeInBytes)(tensor, &bytes) ==
        CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  CHECK(InCategory(STAND_IN(cudnnSetTensor4dDescriptor)(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                        1, -2, 3, 4),
                   CUDNN_STATUS_BAD_PARAM));
  CHECK(STAND_IN(cudnnDestroyTensorDescriptor)(tensor) == CUDNN_STATUS_SUCCESS);
  // Destroyed: no longer a live descriptor.
  CHECK(InCategory(STAND_IN(cudnnGetTensorSizeInBytes)(tensor, &bytes), CUDNN_STATUS_BAD_PARAM));
  cudnnBackendDescriptor_t backend = nullptr;
  CHECK(InCategory(STAND_IN(cudnnBackendCreateDescriptor)(
                       static_cast<cudnnBackendDescriptorType_t>(9999), &backend),
                   CUDNN_STATUS_NOT_SUPPORTED));
  CHECK(STAND_IN(cudnnDestroy)(handle) == CUDNN_STATUS_SUCCESS);
  CHECK(InCategory(STAND_IN(cudnnDestroy)(handle), CUDNN_STATUS_BAD_PARAM));
}

}  // namespace
}  // namespace tally::libraries
