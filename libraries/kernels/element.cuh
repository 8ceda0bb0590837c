// Element types in device code: conversion to and from the type a kernel computes in.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries::kernels {

template <typename Acc, typename T>
__device__ __forceinline__ Acc ToAcc(T value) {
  return static_cast<Acc>(value);
}
template <>
__device__ __forceinline__ float ToAcc<float, __half>(__half value) {
  return __half2float(value);
}
template <>
__device__ __forceinline__ float ToAcc<float, __nv_bfloat16>(__nv_bfloat16 value) {
  return __bfloat162float(value);
}

template <typename T, typename Acc>
__device__ __forceinline__ T FromAcc(Acc value) {
  return static_cast<T>(value);
}
template <>
__device__ __forceinline__ __half FromAcc<__half, float>(float value) {
  return __float2half_rn(value);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromAcc<__nv_bfloat16, float>(float value) {
  return __float2bfloat16_rn(value);
}

// A scalar argument in the kernel: the value, or the device copy where one is given.
template <typename Acc>
struct DeviceScalar {
  Acc value;
  const Acc* device;
  __device__ __forceinline__ Acc Get() const { return device != nullptr ? *device : value; }
};

template <typename Acc>
DeviceScalar<Acc> ToDevice(const Scalar& scalar) {
  return {static_cast<Acc>(scalar.value), static_cast<const Acc*>(scalar.device)};
}

// Element `i` of a BLAS vector of `n` elements `inc` apart (from the end for a negative inc).
__device__ __forceinline__ int64_t VectorIndex(int64_t i, int64_t n, int64_t inc) {
  return inc >= 0 ? i * inc : (n - 1 - i) * -inc;
}

// A launch through cudaLaunchKernel, whose result is the launch's own (a <<<>>> launch would
// need cudaGetLastError, which would also take the application's earlier error).
// The arguments are converted to the parameters' exact types (not deduced from them).
template <typename T>
struct Exactly {
  using type = T;
};
template <typename... Params>
cudaError_t LaunchKernel(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                         typename Exactly<Params>::type... args) {
  void* pointers[] = {static_cast<void*>(&args)...};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, pointers, 0, stream);
}

// Grid-stride loops: enough blocks for `n` elements, at most a bounded grid.
constexpr int kThreads = 256;
inline unsigned int BlocksFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

// The block's sum (or maximum) of each thread's `value`, in every thread.
template <bool kMax>
__device__ inline double BlockReduce(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const double other = partial[threadIdx.x + half];
      partial[threadIdx.x] =
          kMax ? fmax(partial[threadIdx.x], other) : partial[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const double result = partial[0];
  __syncthreads();  // `partial` may be reused by the next reduction
  return result;
}

}  // namespace tally::libraries::kernels
