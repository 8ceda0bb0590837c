// Pointwise operations on tensors in grid-stride loops (add-tensor with broadcast, set, scale,
// activation forward and backward), and the per-channel sum of convolution's bias gradient (one
// block per channel, reducing through shared memory).
#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

// The offset in a broadcast operand of the element at `index` of the full shape: a dimension of
// size 1 in the operand stays at 0.
__device__ int64_t BroadcastOffset(const TensorShape& full, const TensorShape& operand,
                                   int64_t index) {
  int64_t offset = 0;
  for (int d = full.rank - 1; d >= 0; --d) {
    if (operand.dims[d] != 1) offset += (index % full.dims[d]) * operand.strides[d];
    index /= full.dims[d];
  }
  return offset;
}

template <typename T>
__global__ void AddTensor(DeviceBlend<Compute<T>> blend, TensorShape a_shape, const T* a,
                          TensorShape c_shape, T* c, int64_t total) {
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    Store(c + OffsetOf(c_shape, i), ToAcc<Compute<T>>(a[BroadcastOffset(c_shape, a_shape, i)]),
          blend);
  }
}

// y = value (scale: false) or y = value * y (scale: true).
template <typename T>
__global__ void SetOrScale(TensorShape shape, T* y, Compute<T> value, bool scale, int64_t total) {
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    T* element = y + OffsetOf(shape, i);
    *element = FromAcc<T>(scale ? value * ToAcc<Compute<T>>(*element) : value);
  }
}

template <typename T>
__global__ void ActivationForward(ActivationFunction f, DeviceBlend<Compute<T>> blend,
                                  TensorShape x_shape, const T* x, TensorShape y_shape, T* y,
                                  int64_t total) {
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    Store(y + OffsetOf(y_shape, i), Activate(f, ToAcc<Compute<T>>(x[OffsetOf(x_shape, i)])),
          blend);
  }
}

struct ActivationOperands {
  TensorShape y, dy, x, dx;
};

template <typename T>
__global__ void ActivationBackward(ActivationFunction f, DeviceBlend<Compute<T>> blend,
                                   ActivationOperands shapes, const T* y, const T* dy,
                                   const T* x, T* dx, int64_t total) {
  using A = Compute<T>;
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const A slope = Derivative(f, ToAcc<A>(x[OffsetOf(shapes.x, i)]),
                               ToAcc<A>(y[OffsetOf(shapes.y, i)]));
    Store(dx + OffsetOf(shapes.dx, i), ToAcc<A>(dy[OffsetOf(shapes.dy, i)]) * slope, blend);
  }
}

// Block c sums dy over every dimension but 1 (C).
template <typename T>
__global__ void ChannelSum(DeviceBlend<Compute<T>> blend, TensorShape dy_shape, const T* dy,
                           int64_t per_channel, int64_t db_stride, T* db) {
  const int64_t c = blockIdx.x;
  TensorShape rest = dy_shape;  // the tensor without its C dimension
  rest.dims[1] = 1;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < per_channel; i += blockDim.x) {
    sum += ToAcc<Compute<T>>(dy[c * dy_shape.strides[1] + OffsetOf(rest, i)]);
  }
  sum = BlockReduce<false>(sum);
  if (threadIdx.x == 0) Store(db + c * db_stride, static_cast<Compute<T>>(sum), blend);
}

cudaError_t LaunchSetOrScale(ElementType type, Tensor y, double value, bool scale,
                             cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = y.shape.Elements();
    return LaunchKernel(SetOrScale<T>, BlocksFor(total), kThreads, stream, y.shape,
                        static_cast<T*>(y.data), static_cast<Compute<T>>(value), scale, total);
  });
}

}  // namespace

cudaError_t LaunchAddTensor(ElementType type, Blend blend, Tensor a, Tensor c,
                            cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = c.shape.Elements();
    return LaunchKernel(AddTensor<T>, BlocksFor(total), kThreads, stream,
                        ToDevice<Compute<T>>(blend), a.shape, static_cast<const T*>(a.data),
                        c.shape, static_cast<T*>(c.data), total);
  });
}

cudaError_t LaunchSetTensor(ElementType type, Tensor y, double value, cudaStream_t stream) {
  return LaunchSetOrScale(type, y, value, false, stream);
}

cudaError_t LaunchScaleTensor(ElementType type, Tensor y, double value, cudaStream_t stream) {
  return LaunchSetOrScale(type, y, value, true, stream);
}

cudaError_t LaunchActivationForward(ElementType type, ActivationFunction f, Blend blend,
                                    Tensor x, Tensor y, cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = y.shape.Elements();
    return LaunchKernel(ActivationForward<T>, BlocksFor(total), kThreads, stream, f,
                        ToDevice<Compute<T>>(blend), x.shape, static_cast<const T*>(x.data),
                        y.shape, static_cast<T*>(y.data), total);
  });
}

cudaError_t LaunchActivationBackward(ElementType type, ActivationFunction f, Blend blend,
                                     Tensor y, Tensor dy, Tensor x, Tensor dx,
                                     cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = dx.shape.Elements();
    return LaunchKernel(ActivationBackward<T>, BlocksFor(total), kThreads, stream, f,
                        ToDevice<Compute<T>>(blend),
                        ActivationOperands{y.shape, dy.shape, x.shape, dx.shape},
                        static_cast<const T*>(y.data), static_cast<const T*>(dy.data),
                        static_cast<const T*>(x.data), static_cast<T*>(dx.data), total);
  });
}

cudaError_t LaunchChannelSum(ElementType type, Blend blend, Tensor dy, Tensor db,
                             cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(ChannelSum<T>, static_cast<unsigned int>(dy.shape.dims[1]), kThreads,
                        stream, ToDevice<Compute<T>>(blend), dy.shape,
                        static_cast<const T*>(dy.data), dy.shape.Elements() / dy.shape.dims[1],
                        db.shape.strides[1],
                        static_cast<T*>(db.data));
  });
}

}  // namespace tally::libraries::kernels
