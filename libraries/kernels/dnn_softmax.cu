// Softmax of 4-D tensors, forward and backward: one thread per row, the row being the channels
// of one (n, h, w) position, or all of C x H x W of one n (per instance).
#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

// The rows of a 4-D shape and the offsets of their members.
struct Rows {
  bool per_instance;
  int64_t N, C, H, W;

  __device__ int64_t Count() const { return per_instance ? N : N * H * W; }
  __device__ int64_t Members() const { return per_instance ? C * H * W : C; }
  __device__ int64_t Offset(const TensorShape& shape, int64_t row, int64_t member) const {
    if (per_instance) {
      return OffsetOf(shape, row, member / (H * W), member / W % H, member % W);
    }
    return OffsetOf(shape, row / (H * W), member, row / W % H, row % W);
  }
};

Rows RowsOf(Softmax softmax, const TensorShape& shape) {
  return {softmax.per_instance, shape.dims[0], shape.dims[1], shape.dims[2], shape.dims[3]};
}

template <typename T>
__global__ void Forward(Softmax softmax, Rows rows, DeviceBlend<Compute<T>> blend,
                        TensorShape x_shape, const T* x, TensorShape y_shape, T* y) {
  using A = Compute<T>;
  for (int64_t row = FirstIndex(); row < rows.Count(); row += GridStep()) {
    A largest = 0;  // FAST skips the shift, as cuDNN's does
    if (softmax.accurate || softmax.log) {
      largest = ToAcc<A>(x[rows.Offset(x_shape, row, 0)]);
      for (int64_t j = 1; j < rows.Members(); ++j) {
        largest = fmax(largest, ToAcc<A>(x[rows.Offset(x_shape, row, j)]));
      }
    }
    A sum = 0;
    for (int64_t j = 0; j < rows.Members(); ++j) {
      sum += exp(ToAcc<A>(x[rows.Offset(x_shape, row, j)]) - largest);
    }
    const A log_sum = log(sum);
    for (int64_t j = 0; j < rows.Members(); ++j) {
      const A shifted = ToAcc<A>(x[rows.Offset(x_shape, row, j)]) - largest;
      Store(y + rows.Offset(y_shape, row, j), softmax.log ? shifted - log_sum : exp(shifted) / sum,
            blend);
    }
  }
}

struct BackwardShapes {
  TensorShape y, dy, dx;
};

// dx = y (dy - sum(dy y)); for log softmax dx = dy - exp(y) sum(dy).
template <typename T>
__global__ void Backward(Softmax softmax, Rows rows, DeviceBlend<Compute<T>> blend,
                         BackwardShapes shapes, const T* y, const T* dy, T* dx) {
  using A = Compute<T>;
  for (int64_t row = FirstIndex(); row < rows.Count(); row += GridStep()) {
    A sum = 0;
    for (int64_t j = 0; j < rows.Members(); ++j) {
      const A grad = ToAcc<A>(dy[rows.Offset(shapes.dy, row, j)]);
      sum += softmax.log ? grad : grad * ToAcc<A>(y[rows.Offset(shapes.y, row, j)]);
    }
    for (int64_t j = 0; j < rows.Members(); ++j) {
      const A out = ToAcc<A>(y[rows.Offset(shapes.y, row, j)]);
      const A grad = ToAcc<A>(dy[rows.Offset(shapes.dy, row, j)]);
      Store(dx + rows.Offset(shapes.dx, row, j),
            softmax.log ? grad - exp(out) * sum : out * (grad - sum), blend);
    }
  }
}

int64_t RowCount(Softmax softmax, const TensorShape& shape) {
  return softmax.per_instance ? shape.dims[0] : shape.dims[0] * shape.dims[2] * shape.dims[3];
}

}  // namespace

cudaError_t LaunchSoftmaxForward(ElementType type, Softmax softmax, Blend blend, Tensor x,
                                 Tensor y, cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Forward<T>, BlocksFor(RowCount(softmax, y.shape)), kThreads, stream,
                        softmax, RowsOf(softmax, y.shape), ToDevice<Compute<T>>(blend), x.shape,
                        static_cast<const T*>(x.data), y.shape, static_cast<T*>(y.data));
  });
}

cudaError_t LaunchSoftmaxBackward(ElementType type, Softmax softmax, Blend blend, Tensor y,
                                  Tensor dy, Tensor dx, cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Backward<T>, BlocksFor(RowCount(softmax, dx.shape)), kThreads, stream,
                        softmax, RowsOf(softmax, dx.shape), ToDevice<Compute<T>>(blend),
                        BackwardShapes{y.shape, dy.shape, dx.shape},
                        static_cast<const T*>(y.data), static_cast<const T*>(dy.data),
                        static_cast<T*>(dx.data));
  });
}

}  // namespace tally::libraries::kernels
