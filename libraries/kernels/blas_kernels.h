// Tally's own BLAS kernels (libraries/kernels/*.cu, built with nvcc to PTX at build time): what
// the cuBLAS stand-in launches on the client's stream through the shim's ordinary launch path, so
// that the server transforms, schedules and preempts them like any other kernel. Host-side
// declarations only; every matrix is column-major, as in BLAS.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tally::libraries::kernels {

enum class ElementType : uint8_t { kF32, kF64, kF16, kBF16 };

// A scalar argument: its value (pointer mode host, read when the call was made), or where it is
// in device memory (pointer mode device, read by the kernel), in the computation's type: double
// for f64 problems, float for the others.
struct Scalar {
  double value = 0;
  const void* device = nullptr;
};

// One matrix operand of a (batched) GEMM: entry `i` of the batch at `data + i * stride` elements,
// or at `array[i]` (an array of device pointers in device memory) when `array` is set.
struct MatrixOperand {
  const void* data = nullptr;
  const void* const* array = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;
  bool transposed = false;  // op(X) = X^T (the conjugate transpose is the same for real types)
};

// What is applied to each element of the result before it is stored (cuBLASLt's epilogues):
// the bias vector's element of the row is added, then the activation. GELU is the tanh
// approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
enum class Activation : uint8_t { kNone, kRelu, kGelu };

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  ElementType ab = ElementType::kF32;  // A's and B's type
  ElementType c = ElementType::kF32;   // C's and D's type
  MatrixOperand a, b;
  MatrixOperand c_in;      // C, read where beta is not 0 (never transposed)
  void* d_data = nullptr;  // D, written; the same memory as C for cuBLAS
  void* const* d_array = nullptr;
  int64_t ldd = 0;
  int64_t stride_d = 0;
  Scalar alpha, beta;
  // The epilogue: a bias of m elements of D's type per batch entry (bias_stride elements
  // apart), or none; then the activation.
  const void* bias = nullptr;
  int64_t bias_stride = 0;
  Activation activation = Activation::kNone;
};

// D = act(alpha op(A) op(B) + beta C + bias) for every entry of the batch; C is never read where
// beta is 0, A and B never where alpha is 0. Supported: ab == c (f32, f64, f16, bf16; f16 and
// bf16 with f32 accumulation), and f16 or bf16 A and B with an f32 C.
cudaError_t LaunchGemm(const GemmProblem& problem, cudaStream_t stream);

// Vectors: n elements `inc` apart; a negative increment walks from the end (BLAS).
struct Vector {
  void* data = nullptr;
  int64_t inc = 1;
};

cudaError_t LaunchAxpy(ElementType type, int64_t n, Scalar alpha, Vector x, Vector y,
                       cudaStream_t stream);
cudaError_t LaunchScal(ElementType type, int64_t n, Scalar alpha, Vector x, cudaStream_t stream);
// The result, one element of `type`, goes to device memory at `result`.
cudaError_t LaunchDot(ElementType type, int64_t n, Vector x, Vector y, void* result,
                      cudaStream_t stream);
cudaError_t LaunchNrm2(ElementType type, int64_t n, Vector x, void* result, cudaStream_t stream);

// y = alpha op(A) x + beta y, A m x n; y is never read where beta is 0, A and x never where alpha
// is 0.
cudaError_t LaunchGemv(ElementType type, int64_t m, int64_t n, const void* a, int64_t lda,
                       bool transposed, Scalar alpha, Vector x, Scalar beta, Vector y,
                       cudaStream_t stream);

// C = alpha op(A) + beta op(B), all m x n after op; A is never read where alpha is 0, B never
// where beta is 0.
cudaError_t LaunchGeam(ElementType type, int64_t m, int64_t n, Scalar alpha, MatrixOperand a,
                       Scalar beta, MatrixOperand b, void* c, int64_t ldc, cudaStream_t stream);

}  // namespace tally::libraries::kernels
