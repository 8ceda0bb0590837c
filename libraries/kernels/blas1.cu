// Level-1 BLAS: axpy and scal in grid-stride loops; dot and nrm2 as one block reducing through
// shared memory (BlockReduce; nrm2 scaled by the largest magnitude first, so that no square
// overflows).
#include <cmath>

#include "libraries/kernels/element.cuh"

namespace tally::libraries::kernels {
namespace {

template <typename T>
__global__ void Axpy(int64_t n, DeviceScalar<T> alpha, const T* x, int64_t incx, T* y,
                     int64_t incy) {
  const T a = alpha.Get();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[VectorIndex(i, n, incy)] += a * x[VectorIndex(i, n, incx)];
  }
}

template <typename T>
__global__ void Scal(int64_t n, DeviceScalar<T> alpha, T* x, int64_t incx) {
  const T a = alpha.Get();
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i * incx] *= a;
  }
}

template <typename T>
__global__ void Dot(int64_t n, const T* x, int64_t incx, const T* y, int64_t incy, T* result) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum += static_cast<double>(x[VectorIndex(i, n, incx)]) * y[VectorIndex(i, n, incy)];
  }
  sum = BlockReduce<false>(sum);
  if (threadIdx.x == 0) *result = static_cast<T>(sum);
}

template <typename T>
__global__ void Nrm2(int64_t n, const T* x, int64_t incx, T* result) {
  double largest = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    largest = fmax(largest, fabs(static_cast<double>(x[i * incx])));
  }
  largest = BlockReduce<true>(largest);
  double sum = 0;
  if (largest > 0) {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double scaled = static_cast<double>(x[i * incx]) / largest;
      sum += scaled * scaled;
    }
  }
  sum = BlockReduce<false>(sum);
  if (threadIdx.x == 0) *result = static_cast<T>(largest * sqrt(sum));
}

template <typename T>
cudaError_t Axpy(int64_t n, Scalar alpha, Vector x, Vector y, cudaStream_t stream) {
  return LaunchKernel(Axpy<T>, BlocksFor(n), kThreads, stream, n, ToDevice<T>(alpha),
                      static_cast<const T*>(x.data), x.inc, static_cast<T*>(y.data), y.inc);
}

template <typename T>
cudaError_t Scal(int64_t n, Scalar alpha, Vector x, cudaStream_t stream) {
  return LaunchKernel(Scal<T>, BlocksFor(n), kThreads, stream, n, ToDevice<T>(alpha),
                      static_cast<T*>(x.data), x.inc);
}

template <typename T>
cudaError_t Dot(int64_t n, Vector x, Vector y, void* result, cudaStream_t stream) {
  return LaunchKernel(Dot<T>, 1, kThreads, stream, n, static_cast<const T*>(x.data), x.inc,
                      static_cast<const T*>(y.data), y.inc, static_cast<T*>(result));
}

template <typename T>
cudaError_t Nrm2(int64_t n, Vector x, void* result, cudaStream_t stream) {
  return LaunchKernel(Nrm2<T>, 1, kThreads, stream, n, static_cast<const T*>(x.data), x.inc,
                      static_cast<T*>(result));
}

}  // namespace

cudaError_t LaunchAxpy(ElementType type, int64_t n, Scalar alpha, Vector x, Vector y,
                       cudaStream_t stream) {
  if (type == ElementType::kF32) return Axpy<float>(n, alpha, x, y, stream);
  if (type == ElementType::kF64) return Axpy<double>(n, alpha, x, y, stream);
  return cudaErrorNotSupported;
}

// scal and nrm2 take positive increments only (BLAS: none of x is touched otherwise).
cudaError_t LaunchScal(ElementType type, int64_t n, Scalar alpha, Vector x, cudaStream_t stream) {
  if (type == ElementType::kF32) return Scal<float>(n, alpha, x, stream);
  if (type == ElementType::kF64) return Scal<double>(n, alpha, x, stream);
  return cudaErrorNotSupported;
}

cudaError_t LaunchDot(ElementType type, int64_t n, Vector x, Vector y, void* result,
                      cudaStream_t stream) {
  if (type == ElementType::kF32) return Dot<float>(n, x, y, result, stream);
  if (type == ElementType::kF64) return Dot<double>(n, x, y, result, stream);
  return cudaErrorNotSupported;
}

cudaError_t LaunchNrm2(ElementType type, int64_t n, Vector x, void* result, cudaStream_t stream) {
  if (type == ElementType::kF32) return Nrm2<float>(n, x, result, stream);
  if (type == ElementType::kF64) return Nrm2<double>(n, x, result, stream);
  return cudaErrorNotSupported;
}

}  // namespace tally::libraries::kernels
