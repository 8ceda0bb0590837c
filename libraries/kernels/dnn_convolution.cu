// 2-D convolution, direct: one thread per output element (of y, dx or dw) gathers its sum, so
// that no two threads write one element and no atomics are needed. Forward carries cuDNN's
// fused epilogue (z, bias, activation). A plain kernel: implicit-GEMM tiles are still to come.
#include <type_traits>

#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

// Where a filter tap (r, s) reads the input, and where the filter stores it (turned over for
// CUDNN_CONVOLUTION).
struct Geometry {
  Convolution conv;
  int64_t R, S;

  __device__ int64_t FilterRow(int64_t r) const { return conv.flip ? R - 1 - r : r; }
  __device__ int64_t FilterCol(int64_t s) const { return conv.flip ? S - 1 - s : s; }
  // The input row read by output row p through tap r (may be out of range: padding).
  __device__ int64_t InputRow(int64_t p, int64_t r) const {
    return p * conv.stride[0] - conv.pad[0] + r * conv.dilation[0];
  }
  __device__ int64_t InputCol(int64_t q, int64_t s) const {
    return q * conv.stride[1] - conv.pad[1] + s * conv.dilation[1];
  }
};

template <typename T, typename O>
__global__ void Forward(ConvolutionProblem problem, const T* x, const T* w, O* y,
                        ForwardEpilogue epilogue, const O* z) {
  using A = Compute<T>;
  const TensorShape& xs = problem.x;
  const TensorShape& ws = problem.w;
  const TensorShape& ys = problem.y;
  const Geometry g{problem.conv, ws.dims[2], ws.dims[3]};
  const int64_t K = ys.dims[1], P = ys.dims[2], Q = ys.dims[3];
  const int64_t group_c = ws.dims[1], group_k = K / problem.conv.groups;
  const int64_t total = ys.dims[0] * K * P * Q;
  const DeviceBlend<A> blend = ToDevice<A>(epilogue.blend);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const int64_t q = i % Q, p = i / Q % P, k = i / (Q * P) % K, n = i / (Q * P * K);
    const int64_t c0 = k / group_k * group_c;
    A sum = 0;
    for (int64_t c = 0; c < group_c; ++c) {
      for (int64_t r = 0; r < g.R; ++r) {
        const int64_t h = g.InputRow(p, r);
        if (h < 0 || h >= xs.dims[2]) continue;
        for (int64_t s = 0; s < g.S; ++s) {
          const int64_t col = g.InputCol(q, s);
          if (col < 0 || col >= xs.dims[3]) continue;
          sum += ToAcc<A>(x[OffsetOf(xs, n, c0 + c, h, col)]) *
                 ToAcc<A>(w[OffsetOf(ws, k, c, g.FilterRow(r), g.FilterCol(s))]);
        }
      }
    }
    A value = blend.alpha * sum;
    if (blend.beta != A{0}) {
      value += blend.beta * ToAcc<A>(z[OffsetOf(epilogue.z_shape, n, k, p, q)]);
    }
    if (epilogue.bias != nullptr) {
      value += ToAcc<A>(static_cast<const O*>(epilogue.bias)[k * epilogue.bias_stride]);
    }
    y[OffsetOf(ys, n, k, p, q)] = FromAcc<O>(Activate(epilogue.activation, value));
  }
}

template <typename T>
__global__ void BackwardData(ConvolutionProblem problem, const T* w, const T* dy, T* dx,
                             Blend blend_in) {
  using A = Compute<T>;
  const TensorShape& xs = problem.x;
  const TensorShape& ws = problem.w;
  const TensorShape& ys = problem.y;
  const Geometry g{problem.conv, ws.dims[2], ws.dims[3]};
  const int64_t C = xs.dims[1], H = xs.dims[2], W = xs.dims[3];
  const int64_t P = ys.dims[2], Q = ys.dims[3];
  const int64_t group_c = ws.dims[1], group_k = ys.dims[1] / problem.conv.groups;
  const int64_t total = xs.dims[0] * C * H * W;
  const DeviceBlend<A> blend = ToDevice<A>(blend_in);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const int64_t col = i % W, h = i / W % H, c = i / (W * H) % C, n = i / (W * H * C);
    const int64_t k0 = c / group_c * group_k, filter_c = c % group_c;
    A sum = 0;
    for (int64_t r = 0; r < g.R; ++r) {
      // Output rows p with p * stride - pad + r * dilation == h.
      const int64_t p_scaled = h + problem.conv.pad[0] - r * problem.conv.dilation[0];
      if (p_scaled < 0 || p_scaled % problem.conv.stride[0] != 0) continue;
      const int64_t p = p_scaled / problem.conv.stride[0];
      if (p >= P) continue;
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t q_scaled = col + problem.conv.pad[1] - s * problem.conv.dilation[1];
        if (q_scaled < 0 || q_scaled % problem.conv.stride[1] != 0) continue;
        const int64_t q = q_scaled / problem.conv.stride[1];
        if (q >= Q) continue;
        for (int64_t k = k0; k < k0 + group_k; ++k) {
          sum += ToAcc<A>(dy[OffsetOf(ys, n, k, p, q)]) *
                 ToAcc<A>(w[OffsetOf(ws, k, filter_c, g.FilterRow(r), g.FilterCol(s))]);
        }
      }
    }
    Store(dx + OffsetOf(xs, n, c, h, col), sum, blend);
  }
}

template <typename T>
__global__ void BackwardFilter(ConvolutionProblem problem, const T* x, const T* dy, T* dw,
                               Blend blend_in) {
  using A = Compute<T>;
  const TensorShape& xs = problem.x;
  const TensorShape& ws = problem.w;
  const TensorShape& ys = problem.y;
  const Geometry g{problem.conv, ws.dims[2], ws.dims[3]};
  const int64_t K = ws.dims[0], group_c = ws.dims[1];
  const int64_t group_k = K / problem.conv.groups;
  const int64_t total = K * group_c * g.R * g.S;
  const DeviceBlend<A> blend = ToDevice<A>(blend_in);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    // The tap (r, s) of the input; the filter stores it at (FilterRow(r), FilterCol(s)).
    const int64_t s = i % g.S, r = i / g.S % g.R, c = i / (g.S * g.R) % group_c,
                  k = i / (g.S * g.R * group_c);
    const int64_t input_c = k / group_k * group_c + c;
    A sum = 0;
    for (int64_t n = 0; n < xs.dims[0]; ++n) {
      for (int64_t p = 0; p < ys.dims[2]; ++p) {
        const int64_t h = g.InputRow(p, r);
        if (h < 0 || h >= xs.dims[2]) continue;
        for (int64_t q = 0; q < ys.dims[3]; ++q) {
          const int64_t col = g.InputCol(q, s);
          if (col < 0 || col >= xs.dims[3]) continue;
          sum += ToAcc<A>(x[OffsetOf(xs, n, input_c, h, col)]) *
                 ToAcc<A>(dy[OffsetOf(ys, n, k, p, q)]);
        }
      }
    }
    Store(dw + OffsetOf(ws, k, c, g.FilterRow(r), g.FilterCol(s)), sum, blend);
  }
}

template <typename T, typename O>
cudaError_t LaunchForward(const ConvolutionProblem& problem, const void* x, const void* w, void* y,
                          const ForwardEpilogue& epilogue, cudaStream_t stream) {
  return LaunchKernel(Forward<T, O>, BlocksFor(problem.y.Elements()), kThreads, stream, problem,
                      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<O*>(y),
                      epilogue, static_cast<const O*>(epilogue.z));
}

}  // namespace

cudaError_t LaunchConvolutionForward(const ConvolutionProblem& problem, const void* x,
                                     const void* w, void* y, const ForwardEpilogue& epilogue,
                                     cudaStream_t stream) {
  return WithElementType(problem.type, [&](auto tag) {
    using T = decltype(tag);
    if (problem.y_type == problem.type) {
      return LaunchForward<T, T>(problem, x, w, y, epilogue, stream);
    }
    if (problem.y_type == ElementType::kF32 && !std::is_same_v<T, double>) {
      return LaunchForward<T, float>(problem, x, w, y, epilogue, stream);
    }
    return cudaErrorNotSupported;
  });
}

cudaError_t LaunchConvolutionBackwardData(const ConvolutionProblem& problem, const void* w,
                                          const void* dy, void* dx, Blend blend,
                                          cudaStream_t stream) {
  return WithElementType(problem.type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(BackwardData<T>, BlocksFor(problem.x.Elements()), kThreads, stream,
                        problem, static_cast<const T*>(w), static_cast<const T*>(dy),
                        static_cast<T*>(dx), blend);
  });
}

cudaError_t LaunchConvolutionBackwardFilter(const ConvolutionProblem& problem, const void* x,
                                            const void* dy, void* dw, Blend blend,
                                            cudaStream_t stream) {
  return WithElementType(problem.type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(BackwardFilter<T>, BlocksFor(problem.w.Elements()), kThreads, stream,
                        problem, static_cast<const T*>(x), static_cast<const T*>(dy),
                        static_cast<T*>(dw), blend);
  });
}

}  // namespace tally::libraries::kernels
