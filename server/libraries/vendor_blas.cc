#include "server/libraries/vendor_blas.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "server/libraries/gemm_check.h"

namespace tally::server {
namespace {

constexpr char kCublas[] = "libcublas.so.13";

// cublasGemmStridedBatchedEx with a cublasComputeType_t: the exported function (the header
// overloads it in C++ with a deprecated inline taking a cudaDataType).
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                cublasOperation_t, int, int, int, const void*,
                                                const void*, cudaDataType, int, long long,
                                                const void*, cudaDataType, int, long long,
                                                const void*, void*, cudaDataType, int, long long,
                                                int, cublasComputeType_t, cublasGemmAlgo_t);

// The entry points of cuBLAS the server calls: name, type (the toolkit header's).
#define TALLY_VENDOR_BLAS_ENTRIES(X)                               \
  X(cublasCreate_v2, decltype(&::cublasCreate_v2))                 \
  X(cublasDestroy_v2, decltype(&::cublasDestroy_v2))               \
  X(cublasSetStream_v2, decltype(&::cublasSetStream_v2))           \
  X(cublasSetWorkspace_v2, decltype(&::cublasSetWorkspace_v2))     \
  X(cublasSetPointerMode_v2, decltype(&::cublasSetPointerMode_v2)) \
  X(cublasSetMathMode, decltype(&::cublasSetMathMode))             \
  X(cublasGemmStridedBatchedEx, GemmStridedBatchedEx)

// What a GEMM's scalar argument points at: the client's device address, or its bytes here.
const void* Scalar(const ipc::VendorGemm& call, const std::byte (&scalar)[16]) {
  if (call.scalars_on_device == 0) return scalar;
  uint64_t address = 0;
  std::memcpy(&address, scalar, sizeof(address));
  return reinterpret_cast<const void*>(address);
}

const void* Pointer(uint64_t address) { return reinterpret_cast<const void*>(address); }

}  // namespace

struct VendorBlas::Entries {
#define TALLY_ENTRY(name, type) type name = nullptr;
  TALLY_VENDOR_BLAS_ENTRIES(TALLY_ENTRY)
#undef TALLY_ENTRY
};

absl::StatusOr<std::unique_ptr<VendorBlas>> VendorBlas::Load(const std::string& folder) {
  const std::string path = folder.empty() ? kCublas : folder + "/" + kCublas;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::NotFoundError(absl::StrFormat("dlopen(%s): %s", path, dlerror()));
  }
  auto entries = std::make_unique<Entries>();
  const char* missing = nullptr;
#define TALLY_ENTRY(name, type)                                  \
  entries->name = reinterpret_cast<type>(dlsym(library, #name)); \
  if (entries->name == nullptr && missing == nullptr) missing = #name;
  TALLY_VENDOR_BLAS_ENTRIES(TALLY_ENTRY)
#undef TALLY_ENTRY
  if (missing != nullptr) {
    dlclose(library);
    return absl::NotFoundError(absl::StrFormat("%s has no %s", path, missing));
  }
  // The file the loader found, for the log.
  char found[4096] = {};
  std::string where = path;
  if (dlinfo(library, RTLD_DI_ORIGIN, found) == 0) where = std::string(found) + "/" + kCublas;
  return std::unique_ptr<VendorBlas>(new VendorBlas(library, where, std::move(entries)));
}

VendorBlas::VendorBlas(void* library, std::string path, std::unique_ptr<Entries> entries)
    : library_(library), path_(std::move(path)), entries_(std::move(entries)) {}

VendorBlas::~VendorBlas() {
  if (handle_ != nullptr) entries_->cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
  dlclose(library_);
}

CUresult VendorBlas::Gemm(CUstream stream, const ipc::VendorGemm& call) {
  const Entries& e = *entries_;
  if (handle_ == nullptr) {
    cublasHandle_t handle = nullptr;
    const cublasStatus_t created = e.cublasCreate_v2(&handle);
    if (created != CUBLAS_STATUS_SUCCESS) {
      TALLY_LOG_ERROR("the vendor cuBLAS: cublasCreate failed with status {}",
                      static_cast<int>(created));
      return CUDA_ERROR_NOT_INITIALIZED;
    }
    handle_ = handle;
  }
  const auto handle = static_cast<cublasHandle_t>(handle_);
  // The handle's state is the calling client's for this call: set whole before each one
  // (cublasSetStream also puts back the library's own workspace).
  cublasStatus_t status = e.cublasSetStream_v2(handle, reinterpret_cast<cudaStream_t>(stream));
  if (status == CUBLAS_STATUS_SUCCESS && call.workspace_bytes > 0) {
    status = e.cublasSetWorkspace_v2(handle, reinterpret_cast<void*>(call.workspace),
                                     call.workspace_bytes);
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = e.cublasSetPointerMode_v2(
        handle, call.scalars_on_device ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST);
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = e.cublasSetMathMode(handle, static_cast<cublasMath_t>(call.math_mode));
  }
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = e.cublasGemmStridedBatchedEx(
        handle, static_cast<cublasOperation_t>(call.op_a),
        static_cast<cublasOperation_t>(call.op_b), static_cast<int>(call.m),
        static_cast<int>(call.n), static_cast<int>(call.k), Scalar(call, call.alpha),
        Pointer(call.a), static_cast<cudaDataType>(call.type_a), static_cast<int>(call.lda),
        call.stride_a, Pointer(call.b), static_cast<cudaDataType>(call.type_b),
        static_cast<int>(call.ldb), call.stride_b, Scalar(call, call.beta),
        reinterpret_cast<void*>(call.c), static_cast<cudaDataType>(call.type_c),
        static_cast<int>(call.ldc), call.stride_c, static_cast<int>(call.batch),
        static_cast<cublasComputeType_t>(call.compute), CUBLAS_GEMM_DEFAULT);
  }
  if (status == CUBLAS_STATUS_SUCCESS) return CUDA_SUCCESS;
  TALLY_LOG_WARN("the vendor cuBLAS: {} failed with status {}", DescribeGemm(call),
                 static_cast<int>(status));
  // What the runtime calls a kernel that could not run; the client sees it at its next sync.
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE
             ? CUDA_ERROR_INVALID_VALUE
             : CUDA_ERROR_LAUNCH_FAILED;
}

}  // namespace tally::server
