// GEMM entry points (cublas[SD]gemm, cublasGemmEx and their batched and strided-batched forms):
// arguments checked as the cuBLAS documentation says (CUBLAS_STATUS_INVALID_VALUE), then one
// launch of Tally's GEMM kernel on the handle's stream, or, where the server runs this client's
// cuBLAS calls in NVIDIA's cuBLAS (client/vendor_calls.h), one call posted to it.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>

#include "client/vendor_calls.h"
#include "libraries/blas/gemm_types.h"
#include "libraries/cublas/entry.h"

namespace tally::libraries::cublas {
namespace {

using kernels::ElementType;

// A GEMM call as the entry points give it, before it is checked.
struct GemmCall {
  cublasOperation_t transa, transb;
  int64_t m, n, k;
  const void* alpha;
  const void* a;
  const void* const* a_array;
  int64_t lda, stride_a;
  const void* b;
  const void* const* b_array;
  int64_t ldb, stride_b;
  const void* beta;
  void* c;
  void* const* c_array;
  int64_t ldc, stride_c;
  int64_t batch;
};

// The call's types as cuBLAS names them, for the vendor library.
struct VendorTypes {
  cudaDataType a, b, c;
  cublasComputeType_t compute;
};

size_t ElementBytes(kernels::ElementType type) {
  switch (type) {
    case kernels::ElementType::kF16:
    case kernels::ElementType::kBF16:
      return 2;
    case kernels::ElementType::kF32:
      return 4;
    case kernels::ElementType::kF64:
      return 8;
  }
  return 0;
}

// The checked call, posted to the vendor library on the handle's stream; nullopt where it must
// run in Tally's kernels (operands given as arrays of pointers, or a capture under way).
std::optional<cublasStatus_t> PostToVendor(const Handle& handle, const GemmCall& call,
                                           const GemmTypes& types, const VendorTypes& vendor) {
  if (!ipc::Contains(tally_vendor_libraries(), ipc::Library::kCublas) || call.a_array != nullptr) {
    return std::nullopt;
  }
  ipc::VendorGemm gemm{};
  gemm.op_a = call.transa;
  gemm.op_b = call.transb;
  gemm.m = call.m;
  gemm.n = call.n;
  gemm.k = call.k;
  gemm.lda = call.lda;
  gemm.ldb = call.ldb;
  gemm.ldc = call.ldc;
  gemm.stride_a = call.stride_a;
  gemm.stride_b = call.stride_b;
  gemm.stride_c = call.stride_c;
  gemm.batch = call.batch;
  gemm.type_a = vendor.a;
  gemm.type_b = vendor.b;
  gemm.type_c = vendor.c;
  gemm.compute = vendor.compute;
  gemm.math_mode = handle.math_mode;
  gemm.scalars_on_device = handle.pointer_mode == CUBLAS_POINTER_MODE_DEVICE ? 1 : 0;
  gemm.a = reinterpret_cast<uintptr_t>(call.a);
  gemm.b = reinterpret_cast<uintptr_t>(call.b);
  gemm.c = reinterpret_cast<uintptr_t>(call.c);
  gemm.workspace = reinterpret_cast<uintptr_t>(handle.workspace);
  gemm.workspace_bytes = handle.workspace_bytes;
  const size_t scalar_bytes = ElementBytes(types.scalar);
  PutScalar(gemm.scalars_on_device == 1, call.alpha, scalar_bytes, gemm.alpha);
  PutScalar(gemm.scalars_on_device == 1, call.beta, scalar_bytes, gemm.beta);
  const cudaError_t posted = tally_vendor_gemm(&gemm, handle.stream);
  if (posted == cudaErrorNotSupported) return std::nullopt;
  return FromLaunch(posted);
}

cublasStatus_t RunGemm(const Handle& handle, const GemmCall& call, GemmTypes types,
                       const VendorTypes& vendor) {
  const std::optional<bool> ta = Transposed(call.transa);
  const std::optional<bool> tb = Transposed(call.transb);
  // cuBLAS documentation, cublas<t>gemm: "the parameters m, n, k < 0", a bad operation, a leading
  // dimension smaller than op's rows, or a missing alpha or beta.
  if (!ta || !tb || call.m < 0 || call.n < 0 || call.k < 0 || call.batch < 0 ||
      call.lda < std::max<int64_t>(1, *ta ? call.k : call.m) ||
      call.ldb < std::max<int64_t>(1, *tb ? call.n : call.k) ||
      call.ldc < std::max<int64_t>(1, call.m) || call.alpha == nullptr || call.beta == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (call.m == 0 || call.n == 0 || call.batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (std::optional<cublasStatus_t> posted = PostToVendor(handle, call, types, vendor)) {
    return *posted;
  }
  kernels::GemmProblem problem;
  problem.m = call.m;
  problem.n = call.n;
  problem.k = call.k;
  problem.batch = call.batch;
  problem.ab = types.ab;
  problem.c = types.c;
  problem.a = {call.a, call.a_array, call.lda, call.stride_a, *ta};
  problem.b = {call.b, call.b_array, call.ldb, call.stride_b, *tb};
  // C in place: read as C, written as D.
  problem.c_in = {call.c, call.c_array, call.ldc, call.stride_c, false};
  problem.d_data = call.c;
  problem.d_array = call.c_array;
  problem.ldd = call.ldc;
  problem.stride_d = call.stride_c;
  problem.alpha = ReadScalar(handle, call.alpha, types.scalar);
  problem.beta = ReadScalar(handle, call.beta, types.scalar);
  return FromLaunch(kernels::LaunchGemm(problem, handle.stream));
}

template <typename T>
cublasStatus_t TypedGemm(cublasHandle_t handle, const GemmCall& call) {
  constexpr bool kDouble = std::is_same_v<T, double>;
  constexpr cudaDataType kType = kDouble ? CUDA_R_64F : CUDA_R_32F;
  return BlasCallWithHandle(handle, [&](Handle& h) {
    return RunGemm(h, call, {kElement<T>, kElement<T>, kElement<T>},
                   {kType, kType, kType, kDouble ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F});
  });
}

cublasStatus_t ExGemm(const char* api, cublasHandle_t handle, const GemmCall& call, cudaDataType a,
                      cudaDataType b, cudaDataType c, cublasComputeType_t compute) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    const char* why = "";
    const std::optional<GemmTypes> types = ExTypes(a, b, c, compute, why);
    if (!types) return NotSupported(api, why);
    return RunGemm(h, call, *types, {a, b, c, compute});
  });
}

}  // namespace
}  // namespace tally::libraries::cublas

using tally::libraries::cublas::ExGemm;
using tally::libraries::cublas::GemmCall;
using tally::libraries::cublas::TypedGemm;

extern "C" {

// The float and double entry points, one definition for both (X = S or D, T its type).
#define TALLY_TYPED_GEMMS(X, T)                                                                    \
  cublasStatus_t cublas##X##gemm_v2(cublasHandle_t handle, cublasOperation_t transa,               \
                                    cublasOperation_t transb, int m, int n, int k, const T* alpha, \
                                    const T* A, int lda, const T* B, int ldb, const T* beta, T* C, \
                                    int ldc) {                                                     \
    return TypedGemm<T>(handle, {transa, transb,  m,   n, k,    alpha, A,       nullptr, lda, 0,   \
                                 B,      nullptr, ldb, 0, beta, C,     nullptr, ldc,     0,   1}); \
  }                                                                                                \
  cublasStatus_t cublas##X##gemmStridedBatched(                                                    \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,     \
      int k, const T* alpha, const T* A, int lda, long long int strideA, const T* B, int ldb,      \
      long long int strideB, const T* beta, T* C, int ldc, long long int strideC,                  \
      int batchCount) {                                                                            \
    return TypedGemm<T>(                                                                           \
        handle, {transa,  transb, m,       n,    k, alpha,   A,   nullptr, lda,       strideA, B,  \
                 nullptr, ldb,    strideB, beta, C, nullptr, ldc, strideC, batchCount});           \
  }                                                                                                \
  cublasStatus_t cublas##X##gemmBatched(                                                           \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,     \
      int k, const T* alpha, const T* const Aarray[], int lda, const T* const Barray[], int ldb,   \
      const T* beta, T* const Carray[], int ldc, int batchCount) {                                 \
    return TypedGemm<T>(handle, {transa,                                                           \
                                 transb,                                                           \
                                 m,                                                                \
                                 n,                                                                \
                                 k,                                                                \
                                 alpha,                                                            \
                                 nullptr,                                                          \
                                 reinterpret_cast<const void* const*>(Aarray),                     \
                                 lda,                                                              \
                                 0,                                                                \
                                 nullptr,                                                          \
                                 reinterpret_cast<const void* const*>(Barray),                     \
                                 ldb,                                                              \
                                 0,                                                                \
                                 beta,                                                             \
                                 nullptr,                                                          \
                                 reinterpret_cast<void* const*>(Carray),                           \
                                 ldc,                                                              \
                                 0,                                                                \
                                 batchCount});                                                     \
  }
TALLY_TYPED_GEMMS(S, float)
TALLY_TYPED_GEMMS(D, double)
#undef TALLY_TYPED_GEMMS

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t) {
  return ExGemm("cublasGemmEx", handle,
                {transa, transb,  m,   n, k,    alpha, A,       nullptr, lda, 0,
                 B,      nullptr, ldb, 0, beta, C,     nullptr, ldc,     0,   1},
                Atype, Btype, Ctype, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return ExGemm("cublasGemmStridedBatchedEx", handle,
                {transa, transb,  m,   n,       k,    alpha, A,       nullptr, lda,     strideA,
                 B,      nullptr, ldb, strideB, beta, C,     nullptr, ldc,     strideC, batchCount},
                Atype, Btype, Ctype, computeType);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                   cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                   const void* const Aarray[], cudaDataType Atype, int lda,
                                   const void* const Barray[], cudaDataType Btype, int ldb,
                                   const void* beta, void* const Carray[], cudaDataType Ctype,
                                   int ldc, int batchCount, cublasComputeType_t computeType,
                                   cublasGemmAlgo_t) {
  return ExGemm("cublasGemmBatchedEx", handle,
                {transa,  transb, m,   n, k,    alpha,   nullptr, Aarray, lda, 0,
                 nullptr, Barray, ldb, 0, beta, nullptr, Carray,  ldc,    0,   batchCount},
                Atype, Btype, Ctype, computeType);
}

}  // extern "C"
