// 2-D pooling of 4-D tensors: forward one thread per output element; backward one thread per
// input element, gathering the gradients of the windows that cover it (no atomics).
#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

// The window of output (p, q): its first input row and column, clipped to the input.
struct Window {
  int64_t h0, h1, w0, w1;  // [h0, h1) x [w0, w1) inside the input
  int64_t area;            // of the whole window, padding included
};

__device__ Window WindowOf(const Pooling& pooling, int64_t H, int64_t W, int64_t p, int64_t q) {
  const int64_t h = p * pooling.stride[0] - pooling.pad[0];
  const int64_t w = q * pooling.stride[1] - pooling.pad[1];
  return {max(h, int64_t{0}), min(h + pooling.window[0], H), max(w, int64_t{0}),
          min(w + pooling.window[1], W), pooling.window[0] * pooling.window[1]};
}

// The divisor of an average window.
__device__ int64_t Count(const Pooling& pooling, const Window& window) {
  if (pooling.mode == PoolingMode::kAverageWithPadding) return window.area;
  return (window.h1 - window.h0) * (window.w1 - window.w0);
}

// The position of the window's maximum in x (the first one, row by row).
template <typename T>
__device__ void ArgMax(const TensorShape& shape, const T* x, int64_t n, int64_t c,
                       const Window& window, int64_t* row, int64_t* col) {
  using A = Compute<T>;
  *row = window.h0;
  *col = window.w0;
  A best = ToAcc<A>(x[OffsetOf(shape, n, c, window.h0, window.w0)]);
  for (int64_t h = window.h0; h < window.h1; ++h) {
    for (int64_t w = window.w0; w < window.w1; ++w) {
      const A value = ToAcc<A>(x[OffsetOf(shape, n, c, h, w)]);
      if (value > best) {
        best = value;
        *row = h;
        *col = w;
      }
    }
  }
}

template <typename T>
__global__ void Forward(Pooling pooling, DeviceBlend<Compute<T>> blend, TensorShape x_shape,
                        const T* x, TensorShape y_shape, T* y) {
  using A = Compute<T>;
  const int64_t C = y_shape.dims[1], P = y_shape.dims[2], Q = y_shape.dims[3];
  const int64_t total = y_shape.dims[0] * C * P * Q;
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const int64_t q = i % Q, p = i / Q % P, c = i / (Q * P) % C, n = i / (Q * P * C);
    const Window window = WindowOf(pooling, x_shape.dims[2], x_shape.dims[3], p, q);
    A result = 0;
    if (pooling.mode == PoolingMode::kMax) {
      int64_t row = 0, col = 0;
      ArgMax(x_shape, x, n, c, window, &row, &col);
      result = ToAcc<A>(x[OffsetOf(x_shape, n, c, row, col)]);
    } else {
      for (int64_t h = window.h0; h < window.h1; ++h) {
        for (int64_t w = window.w0; w < window.w1; ++w) {
          result += ToAcc<A>(x[OffsetOf(x_shape, n, c, h, w)]);
        }
      }
      result /= static_cast<A>(Count(pooling, window));
    }
    Store(y + OffsetOf(y_shape, n, c, p, q), result, blend);
  }
}

struct BackwardShapes {
  TensorShape dy, x, dx;
};

// The first output index whose window, `size` wide and `stride` apart from -pad, reaches `at`.
__device__ int64_t FirstCovering(int64_t at, int64_t pad, int64_t size, int64_t stride) {
  const int64_t reach = at + pad - size + 1;  // the window must start at or after this
  return reach <= 0 ? 0 : (reach + stride - 1) / stride;
}

template <typename T>
__global__ void Backward(Pooling pooling, DeviceBlend<Compute<T>> blend, BackwardShapes shapes,
                         const T* dy, const T* x, T* dx) {
  using A = Compute<T>;
  const int64_t C = shapes.dx.dims[1], H = shapes.dx.dims[2], W = shapes.dx.dims[3];
  const int64_t P = shapes.dy.dims[2], Q = shapes.dy.dims[3];
  const int64_t total = shapes.dx.dims[0] * C * H * W;
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const int64_t w = i % W, h = i / W % H, c = i / (W * H) % C, n = i / (W * H * C);
    A sum = 0;
    const int64_t p_last = min((h + pooling.pad[0]) / pooling.stride[0], P - 1);
    const int64_t q_last = min((w + pooling.pad[1]) / pooling.stride[1], Q - 1);
    for (int64_t p = FirstCovering(h, pooling.pad[0], pooling.window[0], pooling.stride[0]);
         p <= p_last; ++p) {
      for (int64_t q = FirstCovering(w, pooling.pad[1], pooling.window[1], pooling.stride[1]);
           q <= q_last; ++q) {
        const Window window = WindowOf(pooling, H, W, p, q);
        const A grad = ToAcc<A>(dy[OffsetOf(shapes.dy, n, c, p, q)]);
        if (pooling.mode == PoolingMode::kMax) {
          int64_t row = 0, col = 0;
          ArgMax(shapes.x, x, n, c, window, &row, &col);
          if (row == h && col == w) sum += grad;
        } else {
          sum += grad / static_cast<A>(Count(pooling, window));
        }
      }
    }
    Store(dx + OffsetOf(shapes.dx, n, c, h, w), sum, blend);
  }
}

}  // namespace

cudaError_t LaunchPoolingForward(ElementType type, const Pooling& pooling, Blend blend, Tensor x,
                                 Tensor y, cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Forward<T>, BlocksFor(y.shape.Elements()), kThreads, stream, pooling,
                        ToDevice<Compute<T>>(blend), x.shape, static_cast<const T*>(x.data),
                        y.shape, static_cast<T*>(y.data));
  });
}

cudaError_t LaunchPoolingBackward(ElementType type, const Pooling& pooling, Blend blend,
                                  Tensor dy, Tensor x, Tensor dx, cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Backward<T>, BlocksFor(dx.shape.Elements()), kThreads, stream, pooling,
                        ToDevice<Compute<T>>(blend), BackwardShapes{dy.shape, x.shape, dx.shape},
                        static_cast<const T*>(dy.data), static_cast<const T*>(x.data),
                        static_cast<T*>(dx.data));
  });
}

}  // namespace tally::libraries::kernels
