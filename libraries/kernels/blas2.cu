// gemv (one thread per element of y, a dot product along A's row or column) and geam (one thread
// per element of C).
#include "libraries/kernels/element.cuh"

namespace tally::libraries::kernels {
namespace {

template <typename T>
__global__ void Gemv(int64_t m, int64_t n, const T* a, int64_t lda, bool transposed,
                     DeviceScalar<T> alpha, const T* x, int64_t incx, DeviceScalar<T> beta, T* y,
                     int64_t incy) {
  const int64_t rows = transposed ? n : m;  // y's length
  const int64_t cols = transposed ? m : n;  // x's length
  const T a_value = alpha.Get();
  const T b_value = beta.Get();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < rows;
       i += int64_t{gridDim.x} * blockDim.x) {
    T sum = 0;
    if (a_value != T(0)) {
      for (int64_t j = 0; j < cols; ++j) {
        const T element = transposed ? a[j + i * lda] : a[i + j * lda];
        sum += element * x[VectorIndex(j, cols, incx)];
      }
    }
    T& out = y[VectorIndex(i, rows, incy)];
    out = b_value != T(0) ? a_value * sum + b_value * out : a_value * sum;
  }
}

template <typename T>
__global__ void Geam(int64_t m, int64_t n, DeviceScalar<T> alpha, const T* a, int64_t lda,
                     bool a_transposed, DeviceScalar<T> beta, const T* b, int64_t ldb,
                     bool b_transposed, T* c, int64_t ldc) {
  const T a_value = alpha.Get();
  const T b_value = beta.Get();
  const int64_t count = m * n;
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < count;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e % m;
    const int64_t j = e / m;
    T value = 0;
    if (a_value != T(0)) value += a_value * (a_transposed ? a[j + i * lda] : a[i + j * lda]);
    if (b_value != T(0)) value += b_value * (b_transposed ? b[j + i * ldb] : b[i + j * ldb]);
    c[i + j * ldc] = value;
  }
}

template <typename T>
cudaError_t Gemv(int64_t m, int64_t n, const void* a, int64_t lda, bool transposed, Scalar alpha,
                 Vector x, Scalar beta, Vector y, cudaStream_t stream) {
  return LaunchKernel(Gemv<T>, BlocksFor(transposed ? n : m), kThreads, stream, m, n,
                      static_cast<const T*>(a), lda, transposed, ToDevice<T>(alpha),
                      static_cast<const T*>(x.data), x.inc, ToDevice<T>(beta),
                      static_cast<T*>(y.data), y.inc);
}

template <typename T>
cudaError_t Geam(int64_t m, int64_t n, Scalar alpha, MatrixOperand a, Scalar beta, MatrixOperand b,
                 void* c, int64_t ldc, cudaStream_t stream) {
  return LaunchKernel(Geam<T>, BlocksFor(m * n), kThreads, stream, m, n, ToDevice<T>(alpha),
                      static_cast<const T*>(a.data), a.ld, a.transposed, ToDevice<T>(beta),
                      static_cast<const T*>(b.data), b.ld, b.transposed, static_cast<T*>(c), ldc);
}

}  // namespace

cudaError_t LaunchGemv(ElementType type, int64_t m, int64_t n, const void* a, int64_t lda,
                       bool transposed, Scalar alpha, Vector x, Scalar beta, Vector y,
                       cudaStream_t stream) {
  if (type == ElementType::kF32) {
    return Gemv<float>(m, n, a, lda, transposed, alpha, x, beta, y, stream);
  }
  if (type == ElementType::kF64) {
    return Gemv<double>(m, n, a, lda, transposed, alpha, x, beta, y, stream);
  }
  return cudaErrorNotSupported;
}

cudaError_t LaunchGeam(ElementType type, int64_t m, int64_t n, Scalar alpha, MatrixOperand a,
                       Scalar beta, MatrixOperand b, void* c, int64_t ldc, cudaStream_t stream) {
  if (type == ElementType::kF32) return Geam<float>(m, n, alpha, a, beta, b, c, ldc, stream);
  if (type == ElementType::kF64) return Geam<double>(m, n, alpha, a, beta, b, c, ldc, stream);
  return cudaErrorNotSupported;
}

}  // namespace tally::libraries::kernels
