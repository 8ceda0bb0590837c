// Convolution, direct: one thread per output element (of y, dx or dw) gathers its sum, so that no
// two threads write one element and no atomics are needed. Tensors are 5-D, with three spatial
// dimensions (a 2-D convolution has a depth of 1). Forward carries cuDNN's fused epilogue (z,
// bias, activation). A plain kernel: implicit-GEMM tiles are still to come.
#include <type_traits>

#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

constexpr int kSpatial = kConvolutionSpatial;

// An element of a 5-D tensor: its two outer indices (N and C; K and C for a filter) and its
// spatial ones.
struct Index {
  int64_t outer[2];
  int64_t at[kSpatial];
};

__device__ int64_t Elements(const TensorShape& shape) {
  int64_t n = 1;
  for (int d = 0; d < 2 + kSpatial; ++d) n *= shape.dims[d];
  return n;
}

// Element i of the shape in its dimension order, the last dimension fastest.
__device__ Index IndexOf(const TensorShape& shape, int64_t i) {
  Index index;
  for (int d = kSpatial - 1; d >= 0; --d) {
    index.at[d] = i % shape.dims[d + 2];
    i /= shape.dims[d + 2];
  }
  index.outer[1] = i % shape.dims[1];
  index.outer[0] = i / shape.dims[1];
  return index;
}

__device__ int64_t OffsetOf(const TensorShape& shape, const Index& index) {
  int64_t offset = index.outer[0] * shape.strides[0] + index.outer[1] * shape.strides[1];
  for (int d = 0; d < kSpatial; ++d) offset += index.at[d] * shape.strides[d + 2];
  return offset;
}

// What a thread holds along every spatial dimension: its output position (forward), its input
// position (backward data) or its filter tap (backward filter). The other two run over what
// meets it: input = output * stride - pad + tap * dilation.
enum class Held { kOutput, kInput, kTap };

// visit(x offset, w offset, y offset) for every meeting of `held` along spatial dimensions d and
// after, the offsets of the dimensions before d given. The filter stores tap t at t, turned over
// for CUDNN_CONVOLUTION; inputs out of range (padding) meet nothing.
template <Held held, int d = 0, typename Visit>
__device__ __forceinline__ void ForEachMeeting(const ConvolutionProblem& p,
                                               const int64_t (&position)[kSpatial], int64_t x_at,
                                               int64_t w_at, int64_t y_at, Visit&& visit) {
  if constexpr (d == kSpatial) {
    visit(x_at, w_at, y_at);
  } else {
    const int64_t stride = p.conv.stride[d], pad = p.conv.pad[d], dilation = p.conv.dilation[d];
    const int64_t taps = p.w.dims[d + 2], inputs = p.x.dims[d + 2], outputs = p.y.dims[d + 2];
    const int64_t count = held == Held::kTap ? outputs : taps;
    for (int64_t v = 0; v < count; ++v) {
      int64_t in, out, tap;
      if constexpr (held == Held::kInput) {
        in = position[d];
        tap = v;
        const int64_t scaled = in + pad - tap * dilation;
        if (scaled < 0 || scaled % stride != 0) continue;
        out = scaled / stride;
        if (out >= outputs) continue;
      } else {
        out = held == Held::kOutput ? position[d] : v;
        tap = held == Held::kOutput ? v : position[d];
        in = out * stride - pad + tap * dilation;
        if (in < 0 || in >= inputs) continue;
      }
      const int64_t stored_tap = p.conv.flip ? taps - 1 - tap : tap;
      ForEachMeeting<held, d + 1>(p, position, x_at + in * p.x.strides[d + 2],
                                  w_at + stored_tap * p.w.strides[d + 2],
                                  y_at + out * p.y.strides[d + 2], visit);
    }
  }
}

template <typename T, typename O>
__global__ void Forward(ConvolutionProblem p, const T* x, const T* w, O* y,
                        ForwardEpilogue epilogue, const O* z) {
  using A = Compute<T>;
  const int64_t group_c = p.w.dims[1], group_k = p.y.dims[1] / p.conv.groups;
  const int64_t total = Elements(p.y);
  const DeviceBlend<A> blend = ToDevice<A>(epilogue.blend);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const Index o = IndexOf(p.y, i);
    const int64_t n = o.outer[0], k = o.outer[1], c0 = k / group_k * group_c;
    A sum = 0;
    for (int64_t c = 0; c < group_c; ++c) {
      ForEachMeeting<Held::kOutput>(p, o.at, n * p.x.strides[0] + (c0 + c) * p.x.strides[1],
                                    k * p.w.strides[0] + c * p.w.strides[1], 0,
                                    [&](int64_t x_at, int64_t w_at, int64_t) {
                                      sum += ToAcc<A>(x[x_at]) * ToAcc<A>(w[w_at]);
                                    });
    }
    A value = blend.alpha * sum;
    if (blend.beta != A{0}) value += blend.beta * ToAcc<A>(z[OffsetOf(epilogue.z_shape, o)]);
    if (epilogue.bias != nullptr) {
      value += ToAcc<A>(static_cast<const O*>(epilogue.bias)[k * epilogue.bias_stride]);
    }
    y[OffsetOf(p.y, o)] = FromAcc<O>(Activate(epilogue.activation, value));
  }
}

template <typename T>
__global__ void BackwardData(ConvolutionProblem p, const T* w, const T* dy, T* dx, Blend blend_in) {
  using A = Compute<T>;
  const int64_t group_c = p.w.dims[1], group_k = p.y.dims[1] / p.conv.groups;
  const int64_t total = Elements(p.x);
  const DeviceBlend<A> blend = ToDevice<A>(blend_in);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const Index in = IndexOf(p.x, i);
    const int64_t n = in.outer[0], c = in.outer[1], k0 = c / group_c * group_k;
    A sum = 0;
    ForEachMeeting<Held::kInput>(p, in.at, 0, (c % group_c) * p.w.strides[1], n * p.y.strides[0],
                                 [&](int64_t, int64_t w_at, int64_t y_at) {
                                   for (int64_t k = k0; k < k0 + group_k; ++k) {
                                     sum += ToAcc<A>(dy[y_at + k * p.y.strides[1]]) *
                                            ToAcc<A>(w[w_at + k * p.w.strides[0]]);
                                   }
                                 });
    Store(dx + OffsetOf(p.x, in), sum, blend);
  }
}

template <typename T>
__global__ void BackwardFilter(ConvolutionProblem p, const T* x, const T* dy, T* dw,
                               Blend blend_in) {
  using A = Compute<T>;
  const int64_t group_c = p.w.dims[1], group_k = p.w.dims[0] / p.conv.groups;
  const int64_t total = Elements(p.w);
  const DeviceBlend<A> blend = ToDevice<A>(blend_in);
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    // The element's spatial index is the tap as the input sees it; the filter stores it turned
    // over for CUDNN_CONVOLUTION, which OffsetOf below undoes.
    Index tap = IndexOf(p.w, i);
    const int64_t k = tap.outer[0], c = tap.outer[1], input_c = k / group_k * group_c + c;
    A sum = 0;
    for (int64_t n = 0; n < p.x.dims[0]; ++n) {
      ForEachMeeting<Held::kTap>(p, tap.at, n * p.x.strides[0] + input_c * p.x.strides[1], 0,
                                 n * p.y.strides[0] + k * p.y.strides[1],
                                 [&](int64_t x_at, int64_t, int64_t y_at) {
                                   sum += ToAcc<A>(x[x_at]) * ToAcc<A>(dy[y_at]);
                                 });
    }
    if (p.conv.flip) {
      for (int d = 0; d < kSpatial; ++d) tap.at[d] = p.w.dims[d + 2] - 1 - tap.at[d];
    }
    Store(dw + OffsetOf(p.w, tap), sum, blend);
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
