// What the deep-learning kernels (dnn_*.cu) share: the type each element type computes in,
// dispatch from an ElementType to a template, element addressing through a tensor's strides,
// blending into an output, and the activation functions.
#pragma once

#include "libraries/kernels/dnn_kernels.h"
#include "libraries/kernels/element.cuh"

namespace tally::libraries::kernels {

// f16, bf16 and f32 compute in f32; f64 in f64.
template <typename T>
struct ComputeTypeOf {
  using type = float;
};
template <>
struct ComputeTypeOf<double> {
  using type = double;
};
template <typename T>
using Compute = typename ComputeTypeOf<T>::type;

// f(T{}) for the C++ type of `type`: f is a generic lambda that launches its instantiation.
template <typename F>
cudaError_t WithElementType(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kF32:
      return f(float{});
    case ElementType::kF64:
      return f(double{});
    case ElementType::kF16:
      return f(__half{});
    case ElementType::kBF16:
      return f(__nv_bfloat16{});
  }
  return cudaErrorNotSupported;
}

// The offset in elements of the element whose index in the tensor's dimension order (the last
// dimension fastest) is `index`.
__device__ inline int64_t OffsetOf(const TensorShape& shape, int64_t index) {
  int64_t offset = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    offset += (index % shape.dims[d]) * shape.strides[d];
    index /= shape.dims[d];
  }
  return offset;
}

// The offset of element (n, c, h, w) of a 4-D tensor.
__device__ inline int64_t OffsetOf(const TensorShape& shape, int64_t n, int64_t c, int64_t h,
                                   int64_t w) {
  return n * shape.strides[0] + c * shape.strides[1] + h * shape.strides[2] +
         w * shape.strides[3];
}

// alpha and beta in the computation's type.
template <typename A>
struct DeviceBlend {
  A alpha, beta;
};
template <typename A>
__host__ __device__ DeviceBlend<A> ToDevice(Blend blend) {
  return {static_cast<A>(blend.alpha), static_cast<A>(blend.beta)};
}

// *out = alpha value + beta *out, *out not read where beta is 0 (it may hold NaN).
template <typename T, typename A>
__device__ __forceinline__ void Store(T* out, A value, DeviceBlend<A> blend) {
  A result = blend.alpha * value;
  if (blend.beta != A{0}) result += blend.beta * ToAcc<A>(*out);
  *out = FromAcc<T>(result);
}

template <typename A>
__device__ __forceinline__ A Sigmoid(A x) {
  return A{1} / (A{1} + exp(-x));
}

template <typename A>
__device__ A Activate(ActivationFunction f, A x) {
  const A coef = static_cast<A>(f.coef);
  switch (f.mode) {
    case ActivationMode::kSigmoid:
      return Sigmoid(x);
    case ActivationMode::kRelu:
      return x > A{0} ? x : A{0};
    case ActivationMode::kTanh:
      return tanh(x);
    case ActivationMode::kClippedRelu:
      return x > A{0} ? (x < coef ? x : coef) : A{0};
    case ActivationMode::kElu:
      return x > A{0} ? x : coef * (exp(x) - A{1});
    case ActivationMode::kSwish:
      return x * Sigmoid(coef * x);
    case ActivationMode::kIdentity:
      break;
  }
  return x;
}

// f'(x), given x and y = f(x).
template <typename A>
__device__ A Derivative(ActivationFunction f, A x, A y) {
  const A coef = static_cast<A>(f.coef);
  switch (f.mode) {
    case ActivationMode::kSigmoid:
      return y * (A{1} - y);
    case ActivationMode::kRelu:
      return x > A{0} ? A{1} : A{0};
    case ActivationMode::kTanh:
      return A{1} - y * y;
    case ActivationMode::kClippedRelu:
      return x > A{0} && x < coef ? A{1} : A{0};
    case ActivationMode::kElu:
      return x > A{0} ? A{1} : coef * exp(x);
    case ActivationMode::kSwish: {
      const A s = Sigmoid(coef * x);
      return s + coef * x * s * (A{1} - s);
    }
    case ActivationMode::kIdentity:
      break;
  }
  return A{1};
}

// A grid-stride loop's first index and step.
__device__ inline int64_t FirstIndex() { return int64_t{blockIdx.x} * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStep() { return int64_t{gridDim.x} * blockDim.x; }

}  // namespace tally::libraries::kernels
