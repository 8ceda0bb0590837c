// Level-1 and level-2 entry points (axpy, scal, dot, nrm2, gemv) and geam, in float and double:
// arguments checked as the cuBLAS documentation says, then Tally's kernels on the handle's stream.
// A reduction's result in pointer mode host is written to the handle's device memory, copied back
// on its stream and waited for, as cuBLAS does ("the result is ... on the host": the call blocks).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "libraries/cublas/entry.h"

namespace tally::libraries::cublas {
namespace {

using kernels::ElementType;
using kernels::Vector;

template <typename T>
cublasStatus_t Axpy(cublasHandle_t handle, int n, const T* alpha, const T* x, int incx, T* y,
                    int incy) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (alpha == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0) return CUBLAS_STATUS_SUCCESS;
    return FromLaunch(kernels::LaunchAxpy(kElement<T>, n, ReadScalar(h, alpha, kElement<T>),
                                          Vector{const_cast<T*>(x), incx}, Vector{y, incy},
                                          h.stream));
  });
}

template <typename T>
cublasStatus_t Scal(cublasHandle_t handle, int n, const T* alpha, T* x, int incx) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (alpha == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    if (n <= 0 || incx <= 0) return CUBLAS_STATUS_SUCCESS;  // BLAS: x is left alone
    return FromLaunch(kernels::LaunchScal(kElement<T>, n, ReadScalar(h, alpha, kElement<T>),
                                          Vector{x, incx}, h.stream));
  });
}

// Runs `launch(device_result)` and delivers its one T to `result` as the pointer mode says.
template <typename T, typename Launch>
cublasStatus_t Reduce(const Handle& h, T* result, Launch&& launch) {
  const bool on_host = h.pointer_mode == CUBLAS_POINTER_MODE_HOST;
  const cublasStatus_t launched = FromLaunch(launch(on_host ? h.result : result));
  if (launched != CUBLAS_STATUS_SUCCESS || !on_host) return launched;
  if (cudaMemcpyAsync(result, h.result, sizeof(T), cudaMemcpyDeviceToHost, h.stream) !=
          cudaSuccess ||
      cudaStreamSynchronize(h.stream) != cudaSuccess) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t Dot(cublasHandle_t handle, int n, const T* x, int incx, const T* y, int incy,
                   T* result) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    return Reduce(h, result, [&](void* out) {
      return kernels::LaunchDot(kElement<T>, std::max(n, 0), Vector{const_cast<T*>(x), incx},
                                Vector{const_cast<T*>(y), incy}, out, h.stream);
    });
  });
}

template <typename T>
cublasStatus_t Nrm2(cublasHandle_t handle, int n, const T* x, int incx, T* result) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (result == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    // BLAS: 0 for n < 1 or incx < 1.
    const int count = n > 0 && incx > 0 ? n : 0;
    return Reduce(h, result, [&](void* out) {
      return kernels::LaunchNrm2(kElement<T>, count, Vector{const_cast<T*>(x), incx}, out,
                                 h.stream);
    });
  });
}

bool ValidOperation(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

template <typename T>
cublasStatus_t Gemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const T* alpha,
                    const T* a, int lda, const T* x, int incx, const T* beta, T* y, int incy) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    if (!ValidOperation(trans) || m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 ||
        incy == 0 || alpha == nullptr || beta == nullptr) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    return FromLaunch(
        kernels::LaunchGemv(kElement<T>, m, n, a, lda, trans != CUBLAS_OP_N,
                            ReadScalar(h, alpha, kElement<T>), Vector{const_cast<T*>(x), incx},
                            ReadScalar(h, beta, kElement<T>), Vector{y, incy}, h.stream));
  });
}

template <typename T>
cublasStatus_t Geam(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                    int m, int n, const T* alpha, const T* a, int lda, const T* beta, const T* b,
                    int ldb, T* c, int ldc) {
  return BlasCallWithHandle(handle, [&](Handle& h) {
    const bool ta = transa != CUBLAS_OP_N;
    const bool tb = transb != CUBLAS_OP_N;
    // cuBLAS documentation, cublas<t>geam: op's rows bound each leading dimension.
    if (!ValidOperation(transa) || !ValidOperation(transb) || m < 0 || n < 0 ||
        lda < std::max(1, ta ? n : m) || ldb < std::max(1, tb ? n : m) || ldc < std::max(1, m) ||
        alpha == nullptr || beta == nullptr || c == nullptr) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    return FromLaunch(kernels::LaunchGeam(
        kElement<T>, m, n, ReadScalar(h, alpha, kElement<T>), {a, nullptr, lda, 0, ta},
        ReadScalar(h, beta, kElement<T>), {b, nullptr, ldb, 0, tb}, c, ldc, h.stream));
  });
}

}  // namespace
}  // namespace tally::libraries::cublas

namespace cublas = tally::libraries::cublas;

extern "C" {

// The float and double entry points, one definition for both (X = S or D, T its type).
#define TALLY_TYPED_VECTOR_CALLS(X, T)                                                             \
  cublasStatus_t cublas##X##axpy_v2(cublasHandle_t handle, int n, const T* alpha, const T* x,      \
                                    int incx, T* y, int incy) {                                    \
    return cublas::Axpy(handle, n, alpha, x, incx, y, incy);                                       \
  }                                                                                                \
  cublasStatus_t cublas##X##scal_v2(cublasHandle_t handle, int n, const T* alpha, T* x,            \
                                    int incx) {                                                    \
    return cublas::Scal(handle, n, alpha, x, incx);                                                \
  }                                                                                                \
  cublasStatus_t cublas##X##dot_v2(cublasHandle_t handle, int n, const T* x, int incx, const T* y, \
                                   int incy, T* result) {                                          \
    return cublas::Dot(handle, n, x, incx, y, incy, result);                                       \
  }                                                                                                \
  cublasStatus_t cublas##X##nrm2_v2(cublasHandle_t handle, int n, const T* x, int incx,            \
                                    T* result) {                                                   \
    return cublas::Nrm2(handle, n, x, incx, result);                                               \
  }                                                                                                \
  cublasStatus_t cublas##X##gemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,  \
                                    const T* alpha, const T* A, int lda, const T* x, int incx,     \
                                    const T* beta, T* y, int incy) {                               \
    return cublas::Gemv(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);               \
  }                                                                                                \
  cublasStatus_t cublas##X##geam(                                                                  \
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,     \
      const T* alpha, const T* A, int lda, const T* beta, const T* B, int ldb, T* C, int ldc) {    \
    return cublas::Geam(handle, transa, transb, m, n, alpha, A, lda, beta, B, ldb, C, ldc);        \
  }
TALLY_TYPED_VECTOR_CALLS(S, float)
TALLY_TYPED_VECTOR_CALLS(D, double)
#undef TALLY_TYPED_VECTOR_CALLS

}  // extern "C"
