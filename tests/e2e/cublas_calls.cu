// cuBLAS through Tally: an unmodified program linked with -lcublas calls every entry point the
// stand-in implements and compares each result with a CPU reference (odd sizes, transposes,
// leading dimensions larger than the rows, batches with stride 0 and pointer arrays, host and
// device scalars, beta = 0 with NaN in C, alpha = 0 with NaN in A), then checks the documented
// statuses for bad input. Prints "CUBLAS OK" when all passed.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "blas_check.h"

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Element (r, c) of op(X), X column-major with leading dimension ld.
double At(const std::vector<double>& x, int ld, bool t, int r, int c) {
  return t ? x[c + static_cast<size_t>(r) * ld] : x[r + static_cast<size_t>(c) * ld];
}

// The reference C = alpha op(A) op(B) + beta C of one batch entry (beta 0: C not read).
std::vector<double> ReferenceGemm(bool ta, bool tb, int m, int n, int k, double alpha,
                                  const std::vector<double>& a, int lda,
                                  const std::vector<double>& b, int ldb, double beta,
                                  std::vector<double> c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += At(a, lda, ta, i, p) * At(b, ldb, tb, p, j);
      double& out = c[i + static_cast<size_t>(j) * ldc];
      out = alpha * sum + (beta == 0 ? 0 : beta * out);
    }
  }
  return c;
}

// Sgemm/Dgemm in every transpose combination, with leading dimensions beyond the rows.
template <typename T, typename Gemm>
void TestGemm(cublasHandle_t handle, Gemm gemm, const char* name) {
  const int m = 37, n = 19, k = 23;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    const int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 2, ldc = m + 5;
    const auto a = Values<T>(static_cast<size_t>(lda) * (ta ? m : k), 1);
    const auto b = Values<T>(static_cast<size_t>(ldb) * (tb ? k : n), 2);
    const auto c = Values<T>(static_cast<size_t>(ldc) * n, 3);
    T *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c);
    const T alpha = 1.5, beta = -0.5;
    CHECK_CUBLAS(gemm(handle, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                      k, &alpha, da, lda, db, ldb, &beta, dc, ldc));
    const auto want =
        ReferenceGemm(ta, tb, m, n, k, alpha, Widen(a), lda, Widen(b), ldb, beta, Widen(c), ldc);
    const auto got = ToHost(dc, c.size());
    for (size_t i = 0; i < got.size(); ++i) ExpectNear(got[i], want[i], 1e-5, name, i);
    CHECK_CUDA(cudaFree(da));
    CHECK_CUDA(cudaFree(db));
    CHECK_CUDA(cudaFree(dc));
  }
  std::printf("%s: 4 transpose combinations correct\n", name);
}

// beta = 0 never reads C (NaN there stays out), alpha = 0 never reads A and B.
void TestScalarsNeverRead(cublasHandle_t handle) {
  const int m = 5, n = 4, k = 3;
  auto a = Values<float>(m * k, 1), b = Values<float>(k * n, 2);
  std::vector<float> c(m * n, kNaN);
  float *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c);
  const float one = 1, zero = 0;
  CHECK_CUBLAS(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &zero, dc, m));
  auto want = ReferenceGemm(false, false, m, n, k, 1, Widen(a), m, Widen(b), k, 0,
                            std::vector<double>(m * n, 0), m);
  auto got = ToHost(dc, c.size());
  for (int i = 0; i < m * n; ++i) ExpectNear(got[i], want[i], 1e-6, "beta = 0, NaN in C", i);
  std::vector<float> nan_a(m * k, kNaN);
  CHECK_CUDA(cudaMemcpy(da, nan_a.data(), nan_a.size() * sizeof(float), cudaMemcpyHostToDevice));
  const float two = 2;
  CHECK_CUBLAS(
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &zero, da, m, db, k, &two, dc, m));
  got = ToHost(dc, c.size());
  for (int i = 0; i < m * n; ++i) ExpectNear(got[i], 2 * want[i], 1e-6, "alpha = 0, NaN in A", i);
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dc));
  std::printf("gemm: beta = 0 and alpha = 0 read nothing they must not\n");
}

// Strided-batched with stride 0 for B (one B for every entry), device scalars, and the pointer-
// array form over the same data.
void TestBatched(cublasHandle_t handle) {
  const int m = 9, n = 7, k = 5, batch = 3;
  const long long stride_a = m * k + 4, stride_c = m * n + 1;
  const auto a = Values<float>(stride_a * batch, 4);
  const auto b = Values<float>(k * n, 5);
  const auto c = Values<float>(stride_c * batch, 6);
  float *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c);
  const std::vector<float> scalars = {0.75f, 2.0f};
  float* dscalars = ToDevice(scalars);
  CHECK_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  CHECK_CUBLAS(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dscalars, da, m,
                                         stride_a, db, k, 0, dscalars + 1, dc, m, stride_c, batch));
  CHECK_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  auto got = ToHost(dc, c.size());
  const auto wide_a = Widen(a), wide_c = Widen(c);
  for (int e = 0; e < batch; ++e) {
    std::vector<double> ae(wide_a.begin() + e * stride_a, wide_a.begin() + e * stride_a + m * k);
    std::vector<double> ce(wide_c.begin() + e * stride_c, wide_c.begin() + e * stride_c + m * n);
    const auto want = ReferenceGemm(false, false, m, n, k, 0.75, ae, m, Widen(b), k, 2.0, ce, m);
    for (int i = 0; i < m * n; ++i) {
      ExpectNear(got[e * stride_c + i], want[i], 1e-5, "strided batched", i);
    }
  }
  // The pointer-array form: C of every entry back to its start, then the same product.
  CHECK_CUDA(cudaMemcpy(dc, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<const float*> as, bs;
  std::vector<float*> cs;
  for (int e = 0; e < batch; ++e) {
    as.push_back(da + e * stride_a);
    bs.push_back(db);
    cs.push_back(dc + e * stride_c);
  }
  const float** das = ToDevice(as);
  const float** dbs = ToDevice(bs);
  float** dcs = ToDevice(cs);
  const float alpha = 0.75f, beta = 2.0f;
  CHECK_CUBLAS(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, das, m, dbs, k,
                                  &beta, dcs, m, batch));
  const auto again = ToHost(dc, c.size());
  for (size_t i = 0; i < got.size(); ++i) ExpectNear(again[i], got[i], 1e-6, "batched", i);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                  static_cast<void*>(dscalars), static_cast<void*>(das), static_cast<void*>(dbs),
                  static_cast<void*>(dcs)}) {
    CHECK_CUDA(cudaFree(p));
  }
  std::printf("gemm: strided batched (stride 0, device scalars) and pointer arrays correct\n");
}

// GemmEx and GemmStridedBatchedEx in f16 and bf16 (f32 accumulation; C in the input type and in
// f32) and f32 with TF32 allowed. The sizes span whole and partial 32 x 32 tensor-core tiles
// and a partial slice of k.
template <typename T>
void TestGemmEx(cublasHandle_t handle, cudaDataType type, const char* name) {
  const int m = 37, n = 45, k = 23, batch = 2;
  const auto a = Values<T>(m * k * batch, 7), b = Values<T>(k * n * batch, 8);
  const auto c16 = Values<T>(m * n * batch, 9);
  const auto c32 = Values<float>(m * n * batch, 9);
  T *da = ToDevice(a), *db = ToDevice(b), *dc16 = ToDevice(c16);
  float* dc32 = ToDevice(c32);
  const float alpha = 1.0f, beta = 0.5f;
  CHECK_CUBLAS(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, da,
                                          type, k, m * k, db, type, k, k * n, &beta, dc16, type, m,
                                          m * n, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, da, type, k, db,
                            type, k, &beta, dc32, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  const auto got16 = ToHost(dc16, c16.size());
  const auto got32 = ToHost(dc32, c32.size());
  const auto wa = Widen(a), wb = Widen(b), wc = Widen(c16);
  for (int e = 0; e < batch; ++e) {
    std::vector<double> ae(wa.begin() + e * m * k, wa.begin() + (e + 1) * m * k);
    std::vector<double> be(wb.begin() + e * k * n, wb.begin() + (e + 1) * k * n);
    std::vector<double> ce(wc.begin() + e * m * n, wc.begin() + (e + 1) * m * n);
    const auto want = ReferenceGemm(true, false, m, n, k, 1.0, ae, k, be, k, 0.5, ce, m);
    // The product rounded once to the 16-bit type: 2^-8 relative for bf16.
    for (int i = 0; i < m * n; ++i) {
      ExpectNear(static_cast<float>(got16[e * m * n + i]), want[i], 1.0 / 128, name, i);
      if (e == 0) ExpectNear(got32[i], want[i], 1e-5, name, i);
    }
  }
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc16),
                  static_cast<void*>(dc32)}) {
    CHECK_CUDA(cudaFree(p));
  }
  std::printf("%s: GemmEx and GemmStridedBatchedEx correct\n", name);
}

void TestTf32(cublasHandle_t handle) {
  const int m = 8, n = 8, k = 8;
  const auto a = Values<float>(m * k, 10), b = Values<float>(k * n, 11);
  std::vector<float> c(m * n, kNaN);
  float *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c);
  CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t mode;
  CHECK_CUBLAS(cublasGetMathMode(handle, &mode));
  EXPECT(mode == CUBLAS_TF32_TENSOR_OP_MATH);
  const float alpha = 1, beta = 0;
  CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, CUDA_R_32F, m,
                            db, CUDA_R_32F, k, &beta, dc, CUDA_R_32F, m,
                            CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  const auto want = ReferenceGemm(false, false, m, n, k, 1, Widen(a), m, Widen(b), k, 0,
                                  std::vector<double>(m * n), m);
  const auto got = ToHost(dc, c.size());
  // TF32 keeps 10 bits of mantissa: the tolerance cuBLAS itself would need.
  for (int i = 0; i < m * n; ++i) ExpectNear(got[i], want[i], 1e-2, "tf32", i);
  CHECK_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc)}) {
    CHECK_CUDA(cudaFree(p));
  }
  std::printf("f32 with TF32 allowed: correct\n");
}

// axpy, scal, dot, nrm2 (increments 1, 2 and negative), gemv (both operations), geam.
template <typename T>
void TestVectors(cublasHandle_t handle, const char* name) {
  const int n = 300;
  const auto x = Values<T>(2 * n, 12), y = Values<T>(2 * n, 13);
  T *dx = ToDevice(x), *dy = ToDevice(y);
  const T alpha = 0.5;
  // y[i * 2] += alpha * x[(n - 1 - i) * 1] (incx = -1 walks x from its end)
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSaxpy(handle, n, &alpha, dx, -1, dy, 2));
  } else {
    CHECK_CUBLAS(cublasDaxpy(handle, n, &alpha, dx, -1, dy, 2));
  }
  auto got = ToHost(dy, y.size());
  for (int i = 0; i < 2 * n; ++i) {
    const double want = i % 2 == 0 ? y[i] + 0.5 * x[n - 1 - i / 2] : y[i];
    ExpectNear(got[i], want, 1e-6, "axpy", i);
  }
  T dot = 0, norm = 0;
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSdot(handle, n, dx, 2, dy, 1, &dot));
    CHECK_CUBLAS(cublasSnrm2(handle, n, dx, 1, &norm));
  } else {
    CHECK_CUBLAS(cublasDdot(handle, n, dx, 2, dy, 1, &dot));
    CHECK_CUBLAS(cublasDnrm2(handle, n, dx, 1, &norm));
  }
  double want_dot = 0, want_norm = 0;
  for (int i = 0; i < n; ++i) {
    want_dot += static_cast<double>(x[2 * i]) * got[i];
    want_norm += static_cast<double>(x[i]) * x[i];
  }
  ExpectNear(dot, want_dot, 1e-5, "dot", 0);
  ExpectNear(norm, std::sqrt(want_norm), 1e-5, "nrm2", 0);
  // Device pointer mode: the result lands in device memory.
  T* dresult = ToDevice(std::vector<T>(1, -1));
  CHECK_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_DEVICE));
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSnrm2(handle, n, dx, 1, dresult));
  } else {
    CHECK_CUBLAS(cublasDnrm2(handle, n, dx, 1, dresult));
  }
  CHECK_CUBLAS(cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST));
  ExpectNear(ToHost(dresult, 1)[0], std::sqrt(want_norm), 1e-5, "nrm2 (device result)", 0);
  const T factor = -2;
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSscal(handle, n, &factor, dx, 2));
  } else {
    CHECK_CUBLAS(cublasDscal(handle, n, &factor, dx, 2));
  }
  const auto scaled = ToHost(dx, x.size());
  for (int i = 0; i < 2 * n; ++i)
    ExpectNear(scaled[i], i % 2 == 0 ? -2.0 * x[i] : x[i], 0, "scal", i);
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dy), static_cast<void*>(dresult)}) {
    CHECK_CUDA(cudaFree(p));
  }
  // gemv: A 13 x 6 with lda 15, both operations; beta = 0 with NaN in y.
  const int m = 13, cols = 6, lda = 15;
  const auto a = Values<T>(lda * cols, 14), v = Values<T>(m, 15);
  T *da = ToDevice(a), *dv = ToDevice(v);
  for (bool t : {false, true}) {
    std::vector<T> out(t ? cols : m, static_cast<T>(kNaN));
    T* dout = ToDevice(out);
    const T one = 1, zero = 0;
    const cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
    if constexpr (sizeof(T) == 4) {
      CHECK_CUBLAS(cublasSgemv(handle, op, m, cols, &one, da, lda, dv, 1, &zero, dout, 1));
    } else {
      CHECK_CUBLAS(cublasDgemv(handle, op, m, cols, &one, da, lda, dv, 1, &zero, dout, 1));
    }
    const auto result = ToHost(dout, out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      double want = 0;
      for (int j = 0; j < (t ? m : cols); ++j) {
        want += (t ? a[j + i * lda] : a[i + j * lda]) * static_cast<double>(v[j % m]);
      }
      ExpectNear(result[i], want, 1e-5, "gemv", i);
    }
    CHECK_CUDA(cudaFree(dout));
  }
  // geam: C (13 x 6) = 2 A + 3 B^T, B 6 x 13.
  const auto b = Values<T>(cols * m, 16);
  T* db = ToDevice(b);
  T* dc = ToDevice(std::vector<T>(m * cols));
  const T two = 2, three = 3;
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSgeam(handle, CUBLAS_OP_N, CUBLAS_OP_T, m, cols, &two, da, lda, &three, db,
                             cols, dc, m));
  } else {
    CHECK_CUBLAS(cublasDgeam(handle, CUBLAS_OP_N, CUBLAS_OP_T, m, cols, &two, da, lda, &three, db,
                             cols, dc, m));
  }
  const auto sum = ToHost(dc, m * cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < m; ++i) {
      ExpectNear(sum[i + j * m], 2.0 * a[i + j * lda] + 3.0 * b[j + i * cols], 1e-6, "geam", i);
    }
  }
  for (void* p : {static_cast<void*>(da), static_cast<void*>(dv), static_cast<void*>(db),
                  static_cast<void*>(dc)}) {
    CHECK_CUDA(cudaFree(p));
  }
  std::printf("%s: axpy, dot, nrm2, scal, gemv, geam correct\n", name);
}

// The documented statuses for bad input; none of these launches anything.
void TestBadInput(cublasHandle_t handle) {
  float one = 1;
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, 64 * sizeof(float)));
  EXPECT(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d, 2, &one, d, 2) ==
         CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, d, 2, d, 2, &one, d, 2) ==
         CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &one, d, 3, d, 2, &one, d, 4) ==
         CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 5, &one, d, 4, d, 5, &one, d, 4) ==
         CUBLAS_STATUS_INVALID_VALUE);  // lda < k for op(A) = A^T
  EXPECT(cublasSgemm(handle, static_cast<cublasOperation_t>(9), CUBLAS_OP_N, 2, 2, 2, &one, d, 2, d,
                     2, &one, d, 2) == CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, nullptr, d, 2, d, 2, &one, d, 2) ==
         CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, 2, 4, d, 2,
                                   4, &one, d, 2, 4, -1) == CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, d, CUDA_R_8I, 2, d,
                      CUDA_R_8I, 2, &one, d, CUDA_R_32I, 2, CUBLAS_COMPUTE_32I,
                      CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT(cublasSgemv(handle, CUBLAS_OP_N, 4, 2, &one, d, 2, d, 1, &one, d, 1) ==
         CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT(cublasSgemv(handle, CUBLAS_OP_N, 2, 2, &one, d, 2, d, 0, &one, d, 1) ==
         CUBLAS_STATUS_INVALID_VALUE);  // incx = 0
  EXPECT(cublasSdot(handle, 2, d, 1, d, 1, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasSetPointerMode(handle, static_cast<cublasPointerMode_t>(7)) ==
         CUBLAS_STATUS_INVALID_VALUE);
  // m = 0: nothing to do, successfully.
  EXPECT(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &one, d, 1, d, 2, &one, d, 1) ==
         CUBLAS_STATUS_SUCCESS);
  // A destroyed handle is not a handle any more.
  cublasHandle_t gone = nullptr;
  CHECK_CUBLAS(cublasCreate(&gone));
  CHECK_CUBLAS(cublasDestroy(gone));
  EXPECT(cublasSetStream(gone, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT(cublasDestroy(gone) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK_CUDA(cudaFree(d));
  std::printf("bad input: the documented statuses\n");
}

}  // namespace

int main() {
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  int version = 0;
  CHECK_CUBLAS(cublasGetVersion(handle, &version));
  EXPECT(version >= 13000);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  cudaStream_t got_stream = nullptr;
  CHECK_CUBLAS(cublasGetStream(handle, &got_stream));
  EXPECT(got_stream == stream);
  void* workspace = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, 1 << 16));
  CHECK_CUBLAS(cublasSetWorkspace(handle, workspace, 1 << 16));
  TestGemm<float>(handle, cublasSgemm, "Sgemm");
  TestGemm<double>(handle, cublasDgemm, "Dgemm");
  TestScalarsNeverRead(handle);
  TestBatched(handle);
  TestGemmEx<__half>(handle, CUDA_R_16F, "f16");
  TestGemmEx<__nv_bfloat16>(handle, CUDA_R_16BF, "bf16");
  TestTf32(handle);
  TestVectors<float>(handle, "float");
  TestVectors<double>(handle, "double");
  TestBadInput(handle);
  EXPECT(std::string(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE)) ==
         "CUBLAS_STATUS_INVALID_VALUE");
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(workspace));
  std::printf("CUBLAS OK\n");
  return 0;
}
