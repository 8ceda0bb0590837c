#include "server/libraries/vendor_blas.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "server/libraries/gemm_check.h"

namespace tally::server {
namespace {

constexpr char kCublas[] = "libcublas.so.13";
constexpr char kCublasLt[] = "libcublasLt.so.13";

// cublasGemmStridedBatchedEx with a cublasComputeType_t: the exported function (the header
// overloads it in C++ with a deprecated inline taking a cudaDataType).
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                cublasOperation_t, int, int, int, const void*,
                                                const void*, cudaDataType, int, long long,
                                                const void*, cudaDataType, int, long long,
                                                const void*, void*, cudaDataType, int, long long,
                                                int, cublasComputeType_t, cublasGemmAlgo_t);

// The entry points the server calls: library, name, type (the toolkit header's).
#define TALLY_VENDOR_BLAS_ENTRIES(X)                                                             \
  X(blas, cublasCreate_v2, decltype(&::cublasCreate_v2))                                         \
  X(blas, cublasDestroy_v2, decltype(&::cublasDestroy_v2))                                       \
  X(blas, cublasSetStream_v2, decltype(&::cublasSetStream_v2))                                   \
  X(blas, cublasSetWorkspace_v2, decltype(&::cublasSetWorkspace_v2))                             \
  X(blas, cublasSetPointerMode_v2, decltype(&::cublasSetPointerMode_v2))                         \
  X(blas, cublasSetMathMode, decltype(&::cublasSetMathMode))                                     \
  X(blas, cublasGemmStridedBatchedEx, GemmStridedBatchedEx)                                      \
  X(lt, cublasLtCreate, decltype(&::cublasLtCreate))                                             \
  X(lt, cublasLtDestroy, decltype(&::cublasLtDestroy))                                           \
  X(lt, cublasLtMatmulDescCreate, decltype(&::cublasLtMatmulDescCreate))                         \
  X(lt, cublasLtMatmulDescDestroy, decltype(&::cublasLtMatmulDescDestroy))                       \
  X(lt, cublasLtMatmulDescSetAttribute, decltype(&::cublasLtMatmulDescSetAttribute))             \
  X(lt, cublasLtMatrixLayoutCreate, decltype(&::cublasLtMatrixLayoutCreate))                     \
  X(lt, cublasLtMatrixLayoutDestroy, decltype(&::cublasLtMatrixLayoutDestroy))                   \
  X(lt, cublasLtMatrixLayoutSetAttribute, decltype(&::cublasLtMatrixLayoutSetAttribute))         \
  X(lt, cublasLtMatmulPreferenceCreate, decltype(&::cublasLtMatmulPreferenceCreate))             \
  X(lt, cublasLtMatmulPreferenceDestroy, decltype(&::cublasLtMatmulPreferenceDestroy))           \
  X(lt, cublasLtMatmulPreferenceSetAttribute, decltype(&::cublasLtMatmulPreferenceSetAttribute)) \
  X(lt, cublasLtMatmulAlgoGetHeuristic, decltype(&::cublasLtMatmulAlgoGetHeuristic))             \
  X(lt, cublasLtMatmul, decltype(&::cublasLtMatmul))

// What a GEMM's scalar argument points at: the client's device address, or its bytes here.
template <typename Call>
const void* Scalar(const Call& call, const std::byte (&scalar)[16]) {
  if (call.scalars_on_device == 0) return scalar;
  uint64_t address = 0;
  std::memcpy(&address, scalar, sizeof(address));
  return reinterpret_cast<const void*>(address);
}

const void* Pointer(uint64_t address) { return reinterpret_cast<const void*>(address); }

// The CUresult the client sees at its next synchronising call when the library refused or
// failed a call (the server's log says which status).
CUresult Failed(cublasStatus_t status, const std::string& call) {
  TALLY_LOG_WARN("the vendor library: {} failed with status {}", call, static_cast<int>(status));
  return status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE
             ? CUDA_ERROR_INVALID_VALUE
             : CUDA_ERROR_LAUNCH_FAILED;
}

// A library of `folder` (empty: the loader's search path).
std::string LibraryPath(const std::string& folder, const char* name) {
  return folder.empty() ? name : folder + "/" + name;
}

}  // namespace

struct VendorBlas::Entries {
#define TALLY_ENTRY(library, name, type) type name = nullptr;
  TALLY_VENDOR_BLAS_ENTRIES(TALLY_ENTRY)
#undef TALLY_ENTRY
};

absl::StatusOr<std::unique_ptr<VendorBlas>> VendorBlas::Load(const std::string& folder) {
  // cuBLASLt first: NVIDIA's cuBLAS needs it, and finds it beside itself.
  void* lt = dlopen(LibraryPath(folder, kCublasLt).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lt == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("dlopen(%s): %s", LibraryPath(folder, kCublasLt), dlerror()));
  }
  void* blas = dlopen(LibraryPath(folder, kCublas).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (blas == nullptr) {
    const std::string why = dlerror();
    dlclose(lt);
    return absl::NotFoundError(
        absl::StrFormat("dlopen(%s): %s", LibraryPath(folder, kCublas), why));
  }
  auto entries = std::make_unique<Entries>();
  const char* missing = nullptr;
#define TALLY_ENTRY(library, name, type)                         \
  entries->name = reinterpret_cast<type>(dlsym(library, #name)); \
  if (entries->name == nullptr && missing == nullptr) missing = #name;
  TALLY_VENDOR_BLAS_ENTRIES(TALLY_ENTRY)
#undef TALLY_ENTRY
  if (missing != nullptr) {
    dlclose(blas);
    dlclose(lt);
    return absl::NotFoundError(absl::StrFormat("the vendor cuBLAS has no %s", missing));
  }
  // The file the loader found, for the log.
  char found[4096] = {};
  std::string where = LibraryPath(folder, kCublas);
  if (dlinfo(blas, RTLD_DI_ORIGIN, found) == 0) where = std::string(found) + "/" + kCublas;
  return std::unique_ptr<VendorBlas>(new VendorBlas(blas, lt, where, std::move(entries)));
}

VendorBlas::VendorBlas(void* blas, void* lt, std::string path, std::unique_ptr<Entries> entries)
    : blas_(blas), lt_(lt), path_(std::move(path)), entries_(std::move(entries)) {}

VendorBlas::~VendorBlas() {
  if (handle_ != nullptr) entries_->cublasDestroy_v2(static_cast<cublasHandle_t>(handle_));
  if (lt_handle_ != nullptr) entries_->cublasLtDestroy(static_cast<cublasLtHandle_t>(lt_handle_));
  dlclose(blas_);
  dlclose(lt_);
}

CUresult VendorBlas::Gemm(CUstream stream, const ipc::VendorGemm& call) {
  const Entries& e = *entries_;
  if (handle_ == nullptr) {
    cublasHandle_t handle = nullptr;
    const cublasStatus_t created = e.cublasCreate_v2(&handle);
    if (created != CUBLAS_STATUS_SUCCESS) return Failed(created, "cublasCreate");
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
  return status == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : Failed(status, DescribeGemm(call));
}

CUresult VendorBlas::LtMatmul(CUstream stream, const ipc::VendorLtMatmul& call) {
  const Entries& e = *entries_;
  if (lt_handle_ == nullptr) {
    cublasLtHandle_t handle = nullptr;
    const cublasStatus_t created = e.cublasLtCreate(&handle);
    if (created != CUBLAS_STATUS_SUCCESS) return Failed(created, "cublasLtCreate");
    lt_handle_ = handle;
  }
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  // Each step runs while the previous ones succeeded.
  auto step = [&status](auto&& call_it) {
    if (status == CUBLAS_STATUS_SUCCESS) status = call_it();
  };
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t layouts[4] = {};  // A, B, C, D
  cublasLtMatmulPreference_t preference = nullptr;
  absl::Cleanup destroy = [&] {
    if (op != nullptr) e.cublasLtMatmulDescDestroy(op);
    for (cublasLtMatrixLayout_t layout : layouts) {
      if (layout != nullptr) e.cublasLtMatrixLayoutDestroy(layout);
    }
    if (preference != nullptr) e.cublasLtMatmulPreferenceDestroy(preference);
  };
  auto set_op = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value) {
    step([&] { return e.cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value)); });
  };
  step([&] {
    return e.cublasLtMatmulDescCreate(&op, static_cast<cublasComputeType_t>(call.compute),
                                      static_cast<cudaDataType>(call.scale_type));
  });
  set_op(CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(call.op_a));
  set_op(CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(call.op_b));
  set_op(CUBLASLT_MATMUL_DESC_POINTER_MODE,
         static_cast<int32_t>(call.scalars_on_device ? CUBLASLT_POINTER_MODE_DEVICE
                                                     : CUBLASLT_POINTER_MODE_HOST));
  set_op(CUBLASLT_MATMUL_DESC_EPILOGUE, call.epilogue);
  if (call.bias != 0) {
    set_op(CUBLASLT_MATMUL_DESC_BIAS_POINTER, Pointer(call.bias));
    set_op(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(call.bias_type));
    set_op(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, call.stride_bias);
  }
  const bool ta = call.op_a != CUBLAS_OP_N, tb = call.op_b != CUBLAS_OP_N;
  const struct {
    uint32_t type;
    int64_t rows, cols, ld, batch, stride;
  } shapes[4] = {
      {call.type_a, ta ? call.k : call.m, ta ? call.m : call.k, call.lda, call.batch_a,
       call.stride_a},
      {call.type_b, tb ? call.n : call.k, tb ? call.k : call.n, call.ldb, call.batch_b,
       call.stride_b},
      {call.type_c, call.m, call.n, call.ldc, call.batch, call.stride_c},
      {call.type_d, call.m, call.n, call.ldd, call.batch, call.stride_d},
  };
  for (int i = 0; i < 4; ++i) {
    const auto& shape = shapes[i];
    const int32_t batch = static_cast<int32_t>(shape.batch);
    step([&] {
      return e.cublasLtMatrixLayoutCreate(&layouts[i], static_cast<cudaDataType>(shape.type),
                                          shape.rows, shape.cols, shape.ld);
    });
    step([&] {
      return e.cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &batch, sizeof(batch));
    });
    step([&] {
      return e.cublasLtMatrixLayoutSetAttribute(layouts[i],
                                                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &shape.stride, sizeof(shape.stride));
    });
  }
  step([&] { return e.cublasLtMatmulPreferenceCreate(&preference); });
  step([&] {
    return e.cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &call.workspace_bytes,
        sizeof(call.workspace_bytes));
  });
  const auto handle = static_cast<cublasLtHandle_t>(lt_handle_);
  cublasLtMatmulHeuristicResult_t heuristic = {};
  int found = 0;
  step([&] {
    return e.cublasLtMatmulAlgoGetHeuristic(handle, op, layouts[0], layouts[1], layouts[2],
                                            layouts[3], preference, 1, &heuristic, &found);
  });
  if (status == CUBLAS_STATUS_SUCCESS && found == 0) status = CUBLAS_STATUS_NOT_SUPPORTED;
  step([&] {
    return e.cublasLtMatmul(handle, op, Scalar(call, call.alpha), Pointer(call.a), layouts[0],
                            Pointer(call.b), layouts[1], Scalar(call, call.beta), Pointer(call.c),
                            layouts[2], reinterpret_cast<void*>(call.d), layouts[3],
                            &heuristic.algo, reinterpret_cast<void*>(call.workspace),
                            call.workspace_bytes, reinterpret_cast<cudaStream_t>(stream));
  });
  return status == CUBLAS_STATUS_SUCCESS ? CUDA_SUCCESS : Failed(status, DescribeGemm(call));
}

}  // namespace tally::server
