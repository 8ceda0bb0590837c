// A stand-in for NVIDIA's libcublas.so.13 that tally-server loads on the emulated GPU
// (--vendor-libraries), where NVIDIA's cannot run: the entry points the server calls
// (server/libraries/vendor_blas.cc), answering GEMMs with the plain kernels of fake_gemm.cu
// through the driver API of the emulator the server already loaded (this library needs
// libtally_emu.so by its soname, which the dynamic loader finds loaded). It lets the tests run
// the server's vendor path end to end: the calls forwarded, checked, queued, issued on the
// client's stream, their results compared by the programs against CPU references.
#include <cublas_api.h>
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace {

struct FakeHandle {
  CUstream stream = nullptr;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
  CUmodule module = nullptr;
};

// The PTX of fake_gemm.cu, built beside this library (TALLY_FAKE_GEMM_PTX).
std::string ReadPtx() {
  std::ifstream in(TALLY_FAKE_GEMM_PTX, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
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

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* out) {
  const std::string ptx = ReadPtx();
  CUmodule module = nullptr;
  if (ptx.empty() || cuModuleLoadData(&module, ptx.c_str()) != CUDA_SUCCESS) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  auto* handle = new FakeHandle;
  handle->module = module;
  *out = reinterpret_cast<cublasHandle_t>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  auto* fake = reinterpret_cast<FakeHandle*>(handle);
  cuModuleUnload(fake->module);
  delete fake;
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
  const bool f64 = compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
  const char* in = TypeName(a_type);
  const char* out = TypeName(c_type);
  if (in == nullptr || out == nullptr || a_type != b_type) return CUBLAS_STATUS_NOT_SUPPORTED;
  const std::string name = std::string("fake_gemm_") + in + "_" + out;
  CUfunction function = nullptr;
  if (cuModuleGetFunction(&function, fake->module, name.c_str()) != CUDA_SUCCESS) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  const bool on_device = fake->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  // Scalars by value (host mode) or by address (device mode, read by the kernel).
  double alpha64 = 0, beta64 = 0;
  float alpha32 = 0, beta32 = 0;
  if (!on_device) {
    if (f64) {
      std::memcpy(&alpha64, alpha, sizeof(double));
      std::memcpy(&beta64, beta, sizeof(double));
    } else {
      std::memcpy(&alpha32, alpha, sizeof(float));
      std::memcpy(&beta32, beta, sizeof(float));
    }
  }
  const void* alpha_at = on_device ? alpha : nullptr;
  const void* beta_at = on_device ? beta : nullptr;
  int ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  void* args[] = {&ta,
                  &tb,
                  &m,
                  &n,
                  &k,
                  &alpha_at,
                  f64 ? static_cast<void*>(&alpha64) : &alpha32,
                  &a,
                  &lda,
                  &stride_a,
                  &b,
                  &ldb,
                  &stride_b,
                  &beta_at,
                  f64 ? static_cast<void*>(&beta64) : &beta32,
                  &c,
                  &ldc,
                  &stride_c};
  constexpr unsigned kTile = 8;
  const CUresult launched =
      cuLaunchKernel(function, (m + kTile - 1) / kTile, (n + kTile - 1) / kTile, batch, kTile,
                     kTile, 1, 0, fake->stream, args, nullptr);
  return launched == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // extern "C"
