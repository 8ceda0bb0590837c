// A stand-in for NVIDIA's libcublas.so.13 and libcublasLt.so.13 that tally-server loads on the
// emulated GPU (--vendor-libraries), where NVIDIA's cannot run: the entry points the server calls
// (server/libraries/vendor_blas.cc), answering GEMMs and matmuls with the plain kernels of
// fake_gemm.cu through the driver API of the emulator the server already loaded (this library
// needs libtally_emu.so by its soname, which the dynamic loader finds loaded). It lets the tests
// run the server's vendor path end to end: the calls forwarded, checked, queued, issued on the
// client's stream, their results compared by the programs against CPU references. One file is
// built under both names.
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

// The module of fake_gemm.cu (its PTX built beside this library: TALLY_FAKE_GEMM_PTX), loaded
// at the first handle.
CUmodule Module() {
  static CUmodule module = [] {
    std::ifstream in(TALLY_FAKE_GEMM_PTX, std::ios::binary);
    const std::string ptx(std::istreambuf_iterator<char>(in), {});
    CUmodule loaded = nullptr;
    if (ptx.empty() || cuModuleLoadData(&loaded, ptx.c_str()) != CUDA_SUCCESS) return CUmodule{};
    return loaded;
  }();
  return module;
}

const char* TypeName(cudaDataType type) {
  switch (type) {
    case CUDA_R_32F:
      return "f32";
    case CUDA_R_64F:
      return "f64";
    case CUDA_R_16F:
      return "f16";
    case CUDA_R_16BF:
      return "bf16";
    default:
      return nullptr;
  }
}

// One operand of fake_gemm.cu's kernels.
struct Matrix {
  const void* data;
  int ld;
  long long stride;
};

// Everything a kernel of fake_gemm.cu takes.
struct FakeGemm {
  int ta, tb, m, n, k;
  bool f64, scalars_on_device;
  const void *alpha, *beta;
  cudaDataType in, out;
  Matrix a, b, c, d;
  const void* bias;
  long long stride_bias;
  int activation;
  int batch;
};

cublasStatus_t Launch(const FakeGemm& g, CUstream stream) {
  const char* in = TypeName(g.in);
  const char* out = TypeName(g.out);
  if (in == nullptr || out == nullptr || Module() == nullptr) return CUBLAS_STATUS_NOT_SUPPORTED;
  const std::string name = std::string("fake_gemm_") + in + "_" + out;
  CUfunction function = nullptr;
  if (cuModuleGetFunction(&function, Module(), name.c_str()) != CUDA_SUCCESS) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // Scalars by value (host mode) or by address (device mode, read by the kernel).
  double alpha64 = 0, beta64 = 0;
  float alpha32 = 0, beta32 = 0;
  if (!g.scalars_on_device) {
    std::memcpy(g.f64 ? static_cast<void*>(&alpha64) : &alpha32, g.alpha, g.f64 ? 8 : 4);
    std::memcpy(g.f64 ? static_cast<void*>(&beta64) : &beta32, g.beta, g.f64 ? 8 : 4);
  }
  const void* alpha_at = g.scalars_on_device ? g.alpha : nullptr;
  const void* beta_at = g.scalars_on_device ? g.beta : nullptr;
  FakeGemm x = g;
  void* args[] = {&x.ta,
                  &x.tb,
                  &x.m,
                  &x.n,
                  &x.k,
                  &alpha_at,
                  x.f64 ? static_cast<void*>(&alpha64) : &alpha32,
                  &x.a.data,
                  &x.a.ld,
                  &x.a.stride,
                  &x.b.data,
                  &x.b.ld,
                  &x.b.stride,
                  &beta_at,
                  x.f64 ? static_cast<void*>(&beta64) : &beta32,
                  &x.c.data,
                  &x.c.ld,
                  &x.c.stride,
                  &x.d.data,
                  &x.d.ld,
                  &x.d.stride,
                  &x.bias,
                  &x.stride_bias,
                  &x.activation};
  constexpr unsigned kTile = 8;
  const CUresult launched =
      cuLaunchKernel(function, (g.m + kTile - 1) / kTile, (g.n + kTile - 1) / kTile, g.batch, kTile,
                     kTile, 1, 0, stream, args, nullptr);
  return launched == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

bool IsF64(cublasComputeType_t compute) {
  return compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
}

struct FakeHandle {
  CUstream stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

struct FakeMatmulDesc {
  cublasComputeType_t compute;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;
  int64_t bias_stride = 0;
};

struct FakeLayout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};

// Copies an attribute's value into `field` when the sizes agree.
template <typename T>
cublasStatus_t Put(T& field, const void* buffer, size_t size) {
  if (size != sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buffer, size);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* out) {
  if (Module() == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *out = reinterpret_cast<cublasHandle_t>(new FakeHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<FakeHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  reinterpret_cast<FakeHandle*>(handle)->stream = reinterpret_cast<CUstream>(stream);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;  // the plain kernels need none
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  reinterpret_cast<FakeHandle*>(handle)->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* a, cudaDataType a_type,
                                          int lda, long long stride_a, const void* b,
                                          cudaDataType b_type, int ldb, long long stride_b,
                                          const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
  const auto* fake = reinterpret_cast<const FakeHandle*>(handle);
  if (a_type != b_type) return CUBLAS_STATUS_NOT_SUPPORTED;
  return Launch({transa != CUBLAS_OP_N, transb != CUBLAS_OP_N, m, n, k, IsF64(compute),
                 fake->pointer_mode == CUBLAS_POINTER_MODE_DEVICE, alpha, beta, a_type, c_type,
                 Matrix{a, lda, stride_a}, Matrix{b, ldb, stride_b}, Matrix{c, ldc, stride_c},
                 Matrix{c, ldc, stride_c}, nullptr, 0, 0, batch},
                fake->stream);
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* out) {
  if (Module() == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  *out = reinterpret_cast<cublasLtHandle_t>(new FakeHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete reinterpret_cast<FakeHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* out, cublasComputeType_t compute,
                                        cudaDataType_t) {
  *out = reinterpret_cast<cublasLtMatmulDesc_t>(new FakeMatmulDesc{.compute = compute});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete reinterpret_cast<FakeMatmulDesc*>(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void* buffer, size_t size) {
  auto& d = *reinterpret_cast<FakeMatmulDesc*>(desc);
  switch (attribute) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return Put(d.transa, buffer, size);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return Put(d.transb, buffer, size);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return Put(d.pointer_mode, buffer, size);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return Put(d.epilogue, buffer, size);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return Put(d.bias, buffer, size);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return Put(d.bias_type, buffer, size);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      return Put(d.bias_stride, buffer, size);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* out, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  *out = reinterpret_cast<cublasLtMatrixLayout_t>(
      new FakeLayout{.type = type, .rows = rows, .cols = cols, .ld = ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete reinterpret_cast<FakeLayout*>(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attribute,
                                                const void* buffer, size_t size) {
  auto& l = *reinterpret_cast<FakeLayout*>(layout);
  switch (attribute) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return Put(l.batch, buffer, size);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return Put(l.stride, buffer, size);
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* out) {
  *out = reinterpret_cast<cublasLtMatmulPreference_t>(new int);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  delete reinterpret_cast<int*>(preference);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t,
                                                    cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;  // the plain kernels need no workspace
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  results[0] = {};
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                              cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t*, void*,
                              size_t, cudaStream_t stream) {
  const auto& op = *reinterpret_cast<const FakeMatmulDesc*>(desc);
  const auto& la = *reinterpret_cast<const FakeLayout*>(a_layout);
  const auto& lb = *reinterpret_cast<const FakeLayout*>(b_layout);
  const auto& lc = *reinterpret_cast<const FakeLayout*>(c_layout);
  const auto& ld = *reinterpret_cast<const FakeLayout*>(d_layout);
  const bool ta = op.transa != CUBLAS_OP_N, tb = op.transb != CUBLAS_OP_N;
  int activation = 0;
  bool bias = false;
  switch (op.epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      break;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      bias = true;
      [[fallthrough]];
    case CUBLASLT_EPILOGUE_RELU:
      activation = 1;
      break;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      bias = true;
      [[fallthrough]];
    case CUBLASLT_EPILOGUE_GELU:
      activation = 2;
      break;
    case CUBLASLT_EPILOGUE_BIAS:
      bias = true;
      break;
    default:
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (la.type != lb.type || lc.type != ld.type ||
      (bias && op.bias_type != -1 && op.bias_type != ld.type)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // A batch of one is the same matrix for every entry of D's.
  return Launch(
      {ta, tb, static_cast<int>(ld.rows), static_cast<int>(ld.cols),
       static_cast<int>(ta ? la.rows : la.cols), IsF64(op.compute),
       op.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE, alpha, beta, la.type, ld.type,
       Matrix{a, static_cast<int>(la.ld), la.batch == 1 ? 0 : la.stride},
       Matrix{b, static_cast<int>(lb.ld), lb.batch == 1 ? 0 : lb.stride},
       Matrix{c, static_cast<int>(lc.ld), lc.stride}, Matrix{d, static_cast<int>(ld.ld), ld.stride},
       bias ? op.bias : nullptr, op.bias_stride, activation, ld.batch},
      reinterpret_cast<CUstream>(stream));
}

}  // extern "C"
