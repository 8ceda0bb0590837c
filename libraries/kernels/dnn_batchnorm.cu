// Batch normalisation of 4-D tensors. Training and backward run one block per feature (a
// channel, or a (c, h, w) position per activation), reducing over the feature's members through
// shared memory in double; inference is pointwise.
#include "libraries/kernels/dnn.cuh"

namespace tally::libraries::kernels {
namespace {

// The features of a 4-D shape and the offsets of their members and parameters.
struct Features {
  bool spatial;
  int64_t N, C, H, W;

  __device__ int64_t Members() const { return spatial ? N * H * W : N; }
  __device__ int64_t Offset(const TensorShape& shape, int64_t feature, int64_t member) const {
    if (spatial) return OffsetOf(shape, member / (H * W), feature, member / W % H, member % W);
    return OffsetOf(shape, member, feature / (H * W), feature / W % H, feature % W);
  }
  // The feature's element in a parameter tensor (1 x C x 1 x 1, or 1 x C x H x W).
  __device__ int64_t ParamOffset(const TensorShape& params, int64_t feature) const {
    if (spatial) return feature * params.strides[1];
    return OffsetOf(params, 0, feature / (H * W), feature / W % H, feature % W);
  }
  // The feature of element (n, c, h, w).
  __device__ int64_t Of(int64_t c, int64_t h, int64_t w) const {
    return spatial ? c : (c * H + h) * W + w;
  }
};

Features FeaturesOf(const BatchNorm& bn, const TensorShape& x) {
  return {bn.spatial, x.dims[0], x.dims[1], x.dims[2], x.dims[3]};
}
int64_t FeatureCount(const BatchNorm& bn, const TensorShape& x) {
  return bn.spatial ? x.dims[1] : x.dims[1] * x.dims[2] * x.dims[3];
}

// The block's mean and biased variance of feature `f` of x, in every thread.
template <typename T>
__device__ void Moments(const Features& features, const TensorShape& shape, const T* x,
                        int64_t f, double* mean, double* variance) {
  const int64_t m = features.Members();
  double sum = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    sum += ToAcc<Compute<T>>(x[features.Offset(shape, f, j)]);
  }
  *mean = BlockReduce<false>(sum) / m;
  double squares = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double centred = ToAcc<Compute<T>>(x[features.Offset(shape, f, j)]) - *mean;
    squares += centred * centred;
  }
  *variance = BlockReduce<false>(squares) / m;
}

struct TrainingShapes {
  TensorShape x, y;
};

template <typename T>
__global__ void Training(Features features, double epsilon, DeviceBlend<Compute<T>> blend,
                         TrainingShapes shapes, const T* x, T* y, BatchNormTraining training) {
  using P = Compute<T>;
  const int64_t f = blockIdx.x;
  double mean = 0, variance = 0;
  Moments(features, shapes.x, x, f, &mean, &variance);
  const int64_t param = features.ParamOffset(training.params, f);
  const double inv_std = 1 / sqrt(variance + epsilon);
  const double scale = static_cast<const P*>(training.scale)[param];
  const double bias = static_cast<const P*>(training.bias)[param];
  for (int64_t j = threadIdx.x; j < features.Members(); j += blockDim.x) {
    const double value = ToAcc<P>(x[features.Offset(shapes.x, f, j)]);
    Store(y + features.Offset(shapes.y, f, j),
          static_cast<P>(scale * (value - mean) * inv_std + bias), blend);
  }
  if (threadIdx.x != 0) return;
  const double factor = training.average_factor;
  const int64_t m = features.Members();
  if (training.running_mean != nullptr) {
    P* running = static_cast<P*>(training.running_mean) + param;
    *running = static_cast<P>((1 - factor) * *running + factor * mean);
  }
  if (training.running_variance != nullptr) {
    P* running = static_cast<P*>(training.running_variance) + param;
    const double unbiased = m > 1 ? variance * m / (m - 1) : variance;
    *running = static_cast<P>((1 - factor) * *running + factor * unbiased);
  }
  if (training.save_mean != nullptr) static_cast<P*>(training.save_mean)[param] = mean;
  if (training.save_inv_std != nullptr) static_cast<P*>(training.save_inv_std)[param] = inv_std;
}

struct InferenceParams {
  TensorShape shape;
  const void *scale, *bias, *mean, *variance;
};

template <typename T>
__global__ void Inference(Features features, double epsilon, DeviceBlend<Compute<T>> blend,
                          TrainingShapes shapes, const T* x, T* y, InferenceParams params) {
  using P = Compute<T>;
  const int64_t total = features.N * features.C * features.H * features.W;
  for (int64_t i = FirstIndex(); i < total; i += GridStep()) {
    const int64_t w = i % features.W, h = i / features.W % features.H,
                  c = i / (features.W * features.H) % features.C,
                  n = i / (features.W * features.H * features.C);
    const int64_t param = features.ParamOffset(params.shape, features.Of(c, h, w));
    const P mean = static_cast<const P*>(params.mean)[param];
    const P variance = static_cast<const P*>(params.variance)[param];
    const P value = ToAcc<P>(x[OffsetOf(shapes.x, n, c, h, w)]);
    Store(y + OffsetOf(shapes.y, n, c, h, w),
          static_cast<const P*>(params.scale)[param] * (value - mean) /
                  static_cast<P>(sqrt(variance + static_cast<P>(epsilon))) +
              static_cast<const P*>(params.bias)[param],
          blend);
  }
}

struct BackwardShapes {
  TensorShape x, dy, dx;
};

template <typename T>
__global__ void Backward(Features features, double epsilon, BackwardShapes shapes, const T* x,
                         const T* dy, T* dx, BatchNormGradients gradients) {
  using P = Compute<T>;
  const int64_t f = blockIdx.x;
  const int64_t m = features.Members();
  const int64_t param = features.ParamOffset(gradients.param_shape, f);
  double mean = 0, inv_std = 0;
  if (gradients.saved_mean != nullptr) {
    mean = static_cast<const P*>(gradients.saved_mean)[param];
    inv_std = static_cast<const P*>(gradients.saved_inv_std)[param];
  } else {
    double variance = 0;
    Moments(features, shapes.x, x, f, &mean, &variance);
    inv_std = 1 / sqrt(variance + epsilon);
  }
  double grad_sum = 0, grad_dot = 0;  // sum(dy), sum(dy x_hat)
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double grad = ToAcc<P>(dy[features.Offset(shapes.dy, f, j)]);
    grad_sum += grad;
    grad_dot += grad * (ToAcc<P>(x[features.Offset(shapes.x, f, j)]) - mean) * inv_std;
  }
  grad_sum = BlockReduce<false>(grad_sum);
  grad_dot = BlockReduce<false>(grad_dot);
  const double scale = static_cast<const P*>(gradients.scale)[param];
  const DeviceBlend<P> data = ToDevice<P>(gradients.data);
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double grad = ToAcc<P>(dy[features.Offset(shapes.dy, f, j)]);
    const double x_hat = (ToAcc<P>(x[features.Offset(shapes.x, f, j)]) - mean) * inv_std;
    Store(dx + features.Offset(shapes.dx, f, j),
          static_cast<P>(scale * inv_std / m * (m * grad - grad_sum - x_hat * grad_dot)), data);
  }
  if (threadIdx.x != 0) return;
  const DeviceBlend<P> params = ToDevice<P>(gradients.params);
  Store(static_cast<P*>(gradients.d_scale) + param, static_cast<P>(grad_dot), params);
  Store(static_cast<P*>(gradients.d_bias) + param, static_cast<P>(grad_sum), params);
}

}  // namespace

cudaError_t LaunchBatchNormTraining(ElementType type, const BatchNorm& bn, Blend blend, Tensor x,
                                    Tensor y, const BatchNormTraining& training,
                                    cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Training<T>, static_cast<unsigned int>(FeatureCount(bn, x.shape)),
                        kThreads, stream, FeaturesOf(bn, x.shape), bn.epsilon,
                        ToDevice<Compute<T>>(blend), TrainingShapes{x.shape, y.shape},
                        static_cast<const T*>(x.data), static_cast<T*>(y.data), training);
  });
}

cudaError_t LaunchBatchNormInference(ElementType type, const BatchNorm& bn, Blend blend, Tensor x,
                                     Tensor y, TensorShape params, const void* scale,
                                     const void* bias, const void* mean, const void* variance,
                                     cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Inference<T>, BlocksFor(x.shape.Elements()), kThreads, stream,
                        FeaturesOf(bn, x.shape), bn.epsilon, ToDevice<Compute<T>>(blend),
                        TrainingShapes{x.shape, y.shape}, static_cast<const T*>(x.data),
                        static_cast<T*>(y.data),
                        InferenceParams{params, scale, bias, mean, variance});
  });
}

cudaError_t LaunchBatchNormBackward(ElementType type, const BatchNorm& bn, Tensor x, Tensor dy,
                                    Tensor dx, const BatchNormGradients& gradients,
                                    cudaStream_t stream) {
  return WithElementType(type, [&](auto tag) {
    using T = decltype(tag);
    return LaunchKernel(Backward<T>, static_cast<unsigned int>(FeatureCount(bn, x.shape)),
                        kThreads, stream, FeaturesOf(bn, x.shape), bn.epsilon,
                        BackwardShapes{x.shape, dy.shape, dx.shape},
                        static_cast<const T*>(x.data), static_cast<const T*>(dy.data),
                        static_cast<T*>(dx.data), gradients);
  });
}

}  // namespace tally::libraries::kernels
