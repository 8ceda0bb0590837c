// Library calls of a known number, for tally-ctl status's library_calls (e2e_library_calls):
// cuBLAS 5 (three cublasSgemm, and one captured into a graph that is launched twice: each launch
// runs the call again), cuBLASLt 1 (cublasLtMatmul), cuDNN 2 (cudnnAddTensor). Around them calls
// that launch no kernel (handles, streams, descriptors, layouts, the capture itself, calls
// refused before they launch) and a kernel of the program's own: none of them may count. Every
// result is checked. With --hold the program says DONE after its checks and waits for a line on
// stdin before it exits (so that a test can read its counters from tally-ctl status).
#include <cublasLt.h>
#include <cudnn.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "blas_check.h"
#include "check.h"
#include "dnn_check.h"

namespace {

constexpr int kN = 2;  // 2 x 2 matrices, column-major; 4-element tensors
constexpr int kElements = kN * kN;
const std::vector<float> kA = {1, 2, 3, 4};
const std::vector<float> kIdentity = {1, 0, 0, 1};

__global__ void AddOne(float* data, int n) {
  if (static_cast<int>(threadIdx.x) < n) data[threadIdx.x] += 1;
}

// `got` is `times` kA.
void ExpectMultipleOfA(const float* got, int times, const char* what) {
  const std::vector<float> host = ToHost(got, kElements);
  for (int i = 0; i < kElements; ++i) {
    if (host[i] != times * kA[i]) {
      std::fprintf(stderr, "%s: element %d is %g, not %g\n", what, i, host[i], times * kA[i]);
      std::exit(1);
    }
  }
}

// Five calls: C += A * I three times, once more captured into a graph launched twice.
void CublasCalls(cudaStream_t stream, const float* a, const float* identity) {
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, stream));
  float* c = ToDevice(std::vector<float>(kElements, 0.0f));
  const float one = 1;
  const auto accumulate = [&](int m) {
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, kN, kN, &one, a, kN, identity, kN, &one,
                       c, kN);
  };
  for (int i = 0; i < 3; ++i) CHECK_CUBLAS(accumulate(kN));
  EXPECT(accumulate(-1) == CUBLAS_STATUS_INVALID_VALUE);  // refused before it launches
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK_CUBLAS(accumulate(kN));
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 2; ++i) CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ExpectMultipleOfA(c, 5, "cublasSgemm");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(c));
  CHECK_CUBLAS(cublasDestroy(handle));
}

// One call: D = A * I.
void CublasLtCall(cudaStream_t stream, const float* a, const float* identity) {
  cublasLtHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasLtCreate(&handle));
  cublasLtMatmulDesc_t op = nullptr;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t layout = nullptr;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, kN, kN, kN));
  float* d = ToDevice(std::vector<float>(kElements, 0.0f));
  const float one = 1, zero = 0;
  CHECK_CUBLAS(cublasLtMatmul(handle, op, &one, a, layout, identity, layout, &zero, d, layout, d,
                              layout, nullptr, nullptr, 0, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ExpectMultipleOfA(d, 1, "cublasLtMatmul");
  CHECK_CUDA(cudaFree(d));
  CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(layout));
  CHECK_CUBLAS(cublasLtMatmulDescDestroy(op));
  CHECK_CUBLAS(cublasLtDestroy(handle));
}

// Two calls: C += A twice.
void CudnnCalls(cudaStream_t stream, const float* a) {
  cudnnHandle_t handle = nullptr;
  CHECK_CUDNN(cudnnCreate(&handle));
  CHECK_CUDNN(cudnnSetStream(handle, stream));
  cudnnTensorDescriptor_t tensor = nullptr;
  CHECK_CUDNN(cudnnCreateTensorDescriptor(&tensor));
  CHECK_CUDNN(
      cudnnSetTensor4dDescriptor(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, kElements));
  float* c = ToDevice(std::vector<float>(kElements, 0.0f));
  const float one = 1;
  for (int i = 0; i < 2; ++i) CHECK_CUDNN(cudnnAddTensor(handle, &one, tensor, a, &one, tensor, c));
  // A null handle: refused before it launches.
  EXPECT(cudnnAddTensor(nullptr, &one, tensor, a, &one, tensor, c) != CUDNN_STATUS_SUCCESS);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  ExpectMultipleOfA(c, 2, "cudnnAddTensor");
  CHECK_CUDA(cudaFree(c));
  CHECK_CUDNN(cudnnDestroyTensorDescriptor(tensor));
  CHECK_CUDNN(cudnnDestroy(handle));
}

// The program's own kernel, which is no library call.
void OwnKernel(cudaStream_t stream) {
  float* data = ToDevice(kA);
  AddOne<<<1, 32, 0, stream>>>(data, kElements);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const std::vector<float> host = ToHost(data, kElements);
  for (int i = 0; i < kElements; ++i) EXPECT(host[i] == kA[i] + 1);
  CHECK_CUDA(cudaFree(data));
}

}  // namespace

int main(int argc, char** argv) {
  const bool hold = argc > 1 && std::strcmp(argv[1], "--hold") == 0;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* a = ToDevice(kA);
  float* identity = ToDevice(kIdentity);
  CublasCalls(stream, a, identity);
  CublasLtCall(stream, a, identity);
  CudnnCalls(stream, a);
  OwnKernel(stream);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(identity));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("library_calls: cublas 5, cublaslt 1, cudnn 2 calls made, correct\n");
  if (hold) {
    std::printf("DONE\n");
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  return 0;
}
