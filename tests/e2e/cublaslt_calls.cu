// cuBLASLt through Tally: an unmodified program linked with -lcublasLt (and -lcublas, whose handle
// it also passes as a cuBLASLt handle, as PyTorch does) builds descriptors, asks the heuristic
// for an algorithm and runs cublasLtMatmul with every epilogue the stand-in implements (none,
// ReLU, GELU, bias, bias + ReLU, bias + GELU), in f32, f16 and bf16 with f32 accumulation, with
// transposes, a C apart from D, batches, descriptors made on the stack with the *Init calls, and
// compares each result with a CPU reference; then the documented statuses for bad input.
// Prints "CUBLASLT OK" when all passed.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "blas_check.h"

namespace {

double Gelu(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double Epilogue(cublasLtEpilogue_t epilogue, double value, double bias) {
  if (epilogue & CUBLASLT_EPILOGUE_BIAS) value += bias;
  if ((epilogue & ~CUBLASLT_EPILOGUE_BIAS) == CUBLASLT_EPILOGUE_RELU) value = value > 0 ? value : 0;
  if ((epilogue & ~CUBLASLT_EPILOGUE_BIAS) == CUBLASLT_EPILOGUE_GELU) value = Gelu(value);
  return value;
}

// D (m x n, ldd) = epilogue(alpha op(A) op(B) + beta C + bias) for `batch` entries, with C apart
// from D; op(A) = A^T (A stored k x m), B as it is (k x n).
template <typename T>
void TestMatmul(cublasLtHandle_t handle, cudaDataType type, cublasLtEpilogue_t epilogue,
                const char* name, double tolerance) {
  const int m = 19, n = 13, k = 11, batch = 2;
  const int lda = k + 1, ldb = k, ldc = m + 2, ldd = m;
  const long long sa = lda * m, sb = ldb * n, sc = ldc * n, sd = ldd * n;
  const auto a = Values<T>(sa * batch, 1), b = Values<T>(sb * batch, 2);
  const auto c = Values<T>(sc * batch, 3), bias = Values<T>(m * batch, 4);
  T *da = ToDevice(a), *db = ToDevice(b), *dc = ToDevice(c), *dbias = ToDevice(bias);
  T* dd = ToDevice(std::vector<T>(sd * batch));
  cublasLtMatmulDesc_t op;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t transa = CUBLAS_OP_T;
  CHECK_CUBLAS(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                          sizeof(epilogue)));
  CHECK_CUBLAS(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof(dbias)));
  const int64_t bias_stride = m;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                          sizeof(bias_stride)));
  cublasLtMatrixLayout_t la, lb, lc, ld;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la, type, k, m, lda));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb, type, k, n, ldb));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lc, type, m, n, ldc));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&ld, type, m, n, ldd));
  const std::pair<cublasLtMatrixLayout_t, long long> layouts[] = {
      {la, sa}, {lb, sb}, {lc, sc}, {ld, sd}};
  for (const auto& [layout, stride] : layouts) {
    const int32_t count = batch;
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof(count)));
    const int64_t offset = stride;
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &offset, sizeof(offset)));
  }
  cublasLtMatmulPreference_t preference;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  const uint64_t workspace = 1 << 20;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CHECK_CUBLAS(
      cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, lc, ld, preference, 1, &result, &found));
  EXPECT(found == 1 && result.state == CUBLAS_STATUS_SUCCESS);
  EXPECT(result.workspaceSize <= workspace);
  const float alpha = 1.25f, beta = -0.5f;
  CHECK_CUBLAS(cublasLtMatmul(handle, op, &alpha, da, la, db, lb, &beta, dc, lc, dd, ld, &result.algo,
                          nullptr, 0, nullptr));
  const auto got = Widen(ToHost(dd, sd * batch));
  const auto wa = Widen(a), wb = Widen(b), wc = Widen(c), wbias = Widen(bias);
  for (int e = 0; e < batch; ++e) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double sum = 0;
        for (int p = 0; p < k; ++p) sum += wa[e * sa + p + i * lda] * wb[e * sb + p + j * ldb];
        const double want =
            Epilogue(epilogue, alpha * sum + beta * wc[e * sc + i + j * ldc], wbias[e * m + i]);
        ExpectNear(got[e * sd + i + j * ldd], want, tolerance, name, e * sd + i + j * ldd);
      }
    }
  }
  CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(preference));
  for (cublasLtMatrixLayout_t layout : {la, lb, lc, ld})
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout));
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(op));
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc),
                  static_cast<void*>(dd), static_cast<void*>(dbias)}) {
    CHECK_CUDA(cudaFree(p));
  }
}

// Descriptors on the stack (cublasLt*Init), the cuBLAS handle as the cuBLASLt handle, device
// scalars, and attributes read back.
void TestStackDescriptorsAndCublasHandle() {
  cublasHandle_t blas = nullptr;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  const auto handle = reinterpret_cast<cublasLtHandle_t>(blas);
  const int m = 8, n = 6, k = 5;
  const auto a = Values<float>(m * k, 5), b = Values<float>(k * n, 6);
  float *da = ToDevice(a), *db = ToDevice(b), *dd = ToDevice(std::vector<float>(m * n));
  const std::vector<float> scalars = {2.0f, 0.0f};
  float* dscalars = ToDevice(scalars);
  cublasLtMatmulDescOpaque_t op_storage;
  cublasLtMatrixLayoutOpaque_t la_storage, lb_storage, ld_storage;
  CHECK_CUBLAS(cublasLtMatmulDescInit(&op_storage, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
  CHECK_CUBLAS(cublasLtMatrixLayoutInit(&la_storage, CUDA_R_32F, m, k, m));
  CHECK_CUBLAS(cublasLtMatrixLayoutInit(&lb_storage, CUDA_R_32F, k, n, k));
  CHECK_CUBLAS(cublasLtMatrixLayoutInit(&ld_storage, CUDA_R_32F, m, n, m));
  const int32_t mode = CUBLASLT_POINTER_MODE_DEVICE;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(&op_storage, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode,
                                          sizeof(mode)));
  int32_t read = -1;
  size_t written = 0;
  CHECK_CUBLAS(cublasLtMatmulDescGetAttribute(&op_storage, CUBLASLT_MATMUL_DESC_POINTER_MODE, &read,
                                          sizeof(read), &written));
  EXPECT(read == mode && written == sizeof(read));
  CHECK_CUBLAS(cublasLtMatmulDescGetAttribute(&op_storage, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 0,
                                          &written));
  EXPECT(written == sizeof(int32_t));
  // beta = 0 on the device: D (also C here) is not read, so its NaN stays out.
  const std::vector<float> nan_d(m * n, std::nanf(""));
  CHECK_CUDA(cudaMemcpy(dd, nan_d.data(), m * n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUBLAS(cublasLtMatmul(handle, &op_storage, dscalars, da, &la_storage, db, &lb_storage,
                          dscalars + 1, dd, &ld_storage, dd, &ld_storage, nullptr, nullptr, 0,
                          nullptr));
  const auto got = Widen(ToHost(dd, m * n));
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += a[i + p * m] * static_cast<double>(b[p + j * k]);
      ExpectNear(got[i + j * m], 2 * sum, 1e-2, "stack descriptors, TF32", i + j * m);
    }
  }
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dd),
                  static_cast<void*>(dscalars)}) {
    CHECK_CUDA(cudaFree(p));
  }
  if (cublasDestroy(blas) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  std::printf("stack descriptors, device scalars, the cuBLAS handle as cuBLASLt's: correct\n");
}

void TestBadInput(cublasLtHandle_t handle) {
  cublasLtMatmulDesc_t op;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, ld, wrong;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 4, 3, 4));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 3));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 4, 2, 4));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 5, 2, 5));  // D of the wrong rows
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, 64 * sizeof(float)));
  const float one = 1;
  EXPECT(cublasLtMatmul(nullptr, op, &one, d, la, d, lb, &one, d, ld, d, ld, nullptr, nullptr, 0,
                        nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT(cublasLtMatmul(handle, op, &one, d, la, d, lb, &one, d, wrong, d, wrong, nullptr, nullptr,
                        0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasLtMatmul(handle, nullptr, &one, d, la, d, lb, &one, d, ld, d, ld, nullptr, nullptr,
                        0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  // A leading dimension smaller than the rows.
  cublasLtMatrixLayout_t short_ld;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&short_ld, CUDA_R_32F, 4, 3, 2));
  EXPECT(cublasLtMatmul(handle, op, &one, d, short_ld, d, lb, &one, d, ld, d, ld, nullptr, nullptr,
                        0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  // A bias epilogue without a bias.
  const cublasLtEpilogue_t bias = CUBLASLT_EPILOGUE_BIAS;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias, sizeof(bias)));
  EXPECT(cublasLtMatmul(handle, op, &one, d, la, d, lb, &one, d, ld, d, ld, nullptr, nullptr, 0,
                        nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  // An epilogue with an auxiliary output is not implemented.
  const cublasLtEpilogue_t aux = CUBLASLT_EPILOGUE_RELU_AUX;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &aux, sizeof(aux)));
  EXPECT(cublasLtMatmul(handle, op, &one, d, la, d, lb, &one, d, ld, d, ld, nullptr, nullptr, 0,
                        nullptr) == CUBLAS_STATUS_NOT_SUPPORTED);
  // A wrong size for an attribute, an unknown attribute.
  const int64_t too_wide = CUBLAS_OP_T;
  EXPECT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &too_wide,
                                        sizeof(too_wide)) == CUBLAS_STATUS_INVALID_VALUE);
  EXPECT(cublasLtMatmulDescSetAttribute(op, static_cast<cublasLtMatmulDescAttributes_t>(999), &one,
                                        sizeof(one)) == CUBLAS_STATUS_INVALID_VALUE);
  for (cublasLtMatrixLayout_t layout : {la, lb, ld, wrong, short_ld}) {
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout));
  }
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(op));
  EXPECT(cublasLtMatmulDescDestroy(nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK_CUDA(cudaFree(d));
  std::printf("bad input: the documented statuses\n");
}

}  // namespace

int main() {
  cublasLtHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasLtCreate(&handle));
  EXPECT(cublasLtGetVersion() >= 130000);
  const cublasLtEpilogue_t epilogues[] = {CUBLASLT_EPILOGUE_DEFAULT,   CUBLASLT_EPILOGUE_RELU,
                                          CUBLASLT_EPILOGUE_GELU,      CUBLASLT_EPILOGUE_BIAS,
                                          CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS};
  for (cublasLtEpilogue_t epilogue : epilogues) {
    TestMatmul<float>(handle, CUDA_R_32F, epilogue, "f32", 1e-5);
    TestMatmul<__half>(handle, CUDA_R_16F, epilogue, "f16", 1.0 / 256);
    TestMatmul<__nv_bfloat16>(handle, CUDA_R_16BF, epilogue, "bf16", 1.0 / 64);
  }
  std::printf("cublasLtMatmul: 6 epilogues in f32, f16 and bf16, batched, correct\n");
  TestStackDescriptorsAndCublasHandle();
  TestBadInput(handle);
  CHECK_CUBLAS(cublasLtDestroy(handle));
  std::printf("CUBLASLT OK\n");
  return 0;
}
