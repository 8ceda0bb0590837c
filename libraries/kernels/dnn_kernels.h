// Tally's own deep-learning kernels (libraries/kernels/dnn_*.cu, built with nvcc to PTX at build
// time): what the cuDNN stand-in launches on the client's stream through the shim's ordinary
// launch path, so that the server transforms, schedules and preempts them like any other kernel.
// Host-side declarations only. Tensors are described by their dimensions and strides in elements
// (as cuDNN's descriptors are), so one kernel serves NCHW, NHWC and any padded layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries::kernels {

constexpr int kMaxRank = 8;  // CUDNN_DIM_MAX

// The shape of a tensor: `rank` dimensions (N, C, then the spatial ones for 4-D and 5-D
// tensors) and the distance in elements between neighbours along each.
struct TensorShape {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};

  int64_t Elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
};

// A tensor in device memory.
struct Tensor {
  TensorShape shape;
  void* data = nullptr;
};

// Blending of a result into its output, out = alpha result + beta out, as cuDNN's alpha and beta
// say: the output is never read where beta is 0. Scalars are host values (cuDNN reads them at
// the call), in double here.
struct Blend {
  double alpha = 1;
  double beta = 0;
};

// The pointwise function of an activation (cuDNN's cudnnActivationMode_t, with its coefficient:
// the clipping ceiling, ELU's alpha, or Swish's beta).
enum class ActivationMode : uint8_t { kSigmoid, kRelu, kTanh, kClippedRelu, kElu, kIdentity, kSwish };
struct ActivationFunction {
  ActivationMode mode = ActivationMode::kIdentity;
  double coef = 0;
};

// A convolution of 5-D tensors, three spatial dimensions (a 2-D convolution has a depth of 1):
// x is N x C x D x H x W, w is K x C/groups x T x R x S (its shape's strides say its layout), y
// is N x K x Z x P x Q. `flip`: CUDNN_CONVOLUTION (the filter turned over), else
// cross-correlation.
constexpr int kConvolutionSpatial = 3;
struct Convolution {
  int64_t pad[kConvolutionSpatial] = {};
  int64_t stride[kConvolutionSpatial] = {1, 1, 1};
  int64_t dilation[kConvolutionSpatial] = {1, 1, 1};
  int64_t groups = 1;
  bool flip = false;
};

struct ConvolutionProblem {
  ElementType type = ElementType::kF32;
  // The forward output's type (and z's and the bias's): `type`, or f32 for f16 and bf16 inputs
  // (cuDNN's graphs write convolutions into f32 intermediates).
  ElementType y_type = ElementType::kF32;
  Convolution conv;
  TensorShape x, w, y;  // 5-D
};

// y = act(alpha conv(x, w) + beta z + bias), z (5-D, as y) read only where beta is not 0 (it may
// be y itself), bias (K elements, `bias_stride` apart; null for none) added per output channel.
struct ForwardEpilogue {
  Blend blend;
  const void* z = nullptr;
  TensorShape z_shape;
  const void* bias = nullptr;
  int64_t bias_stride = 1;
  ActivationFunction activation;
};
cudaError_t LaunchConvolutionForward(const ConvolutionProblem& problem, const void* x,
                                     const void* w, void* y, const ForwardEpilogue& epilogue,
                                     cudaStream_t stream);
// dx = alpha conv^T(dy, w) + beta dx.
cudaError_t LaunchConvolutionBackwardData(const ConvolutionProblem& problem, const void* w,
                                          const void* dy, void* dx, Blend blend,
                                          cudaStream_t stream);
// dw = alpha corr(x, dy) + beta dw.
cudaError_t LaunchConvolutionBackwardFilter(const ConvolutionProblem& problem, const void* x,
                                            const void* dy, void* dw, Blend blend,
                                            cudaStream_t stream);

// Pointwise operations on tensors of one type and rank. c = alpha a + beta c, each dimension
// of a either c's or 1 (broadcast).
cudaError_t LaunchAddTensor(ElementType type, Blend blend, Tensor a, Tensor c,
                            cudaStream_t stream);
// Every element of y set to `value`, or multiplied by it.
cudaError_t LaunchSetTensor(ElementType type, Tensor y, double value, cudaStream_t stream);
cudaError_t LaunchScaleTensor(ElementType type, Tensor y, double value, cudaStream_t stream);
// y = alpha f(x) + beta y; dx = alpha dy f'(x) + beta dx (f' from x and y).
cudaError_t LaunchActivationForward(ElementType type, ActivationFunction f, Blend blend,
                                    Tensor x, Tensor y, cudaStream_t stream);
cudaError_t LaunchActivationBackward(ElementType type, ActivationFunction f, Blend blend,
                                     Tensor y, Tensor dy, Tensor x, Tensor dx,
                                     cudaStream_t stream);
// db[k] = alpha (the sum of dy over every dimension but C) + beta db[k]; db has C elements.
cudaError_t LaunchChannelSum(ElementType type, Blend blend, Tensor dy, Tensor db,
                             cudaStream_t stream);

// Softmax over the channels of each (n, h, w) position, or over all of C x H x W for each n
// (`per_instance`). `accurate` subtracts the maximum first; `log` gives log softmax.
struct Softmax {
  bool per_instance = false;
  bool accurate = true;
  bool log = false;
};
cudaError_t LaunchSoftmaxForward(ElementType type, Softmax softmax, Blend blend, Tensor x,
                                 Tensor y, cudaStream_t stream);
cudaError_t LaunchSoftmaxBackward(ElementType type, Softmax softmax, Blend blend, Tensor y,
                                  Tensor dy, Tensor dx, cudaStream_t stream);

// 2-D pooling of 4-D tensors: the maximum, or the average counting the padding or not.
enum class PoolingMode : uint8_t { kMax, kAverageWithPadding, kAverageWithoutPadding };
struct Pooling {
  PoolingMode mode = PoolingMode::kMax;
  int64_t window[2] = {1, 1};
  int64_t pad[2] = {};
  int64_t stride[2] = {1, 1};
};
cudaError_t LaunchPoolingForward(ElementType type, const Pooling& pooling, Blend blend, Tensor x,
                                 Tensor y, cudaStream_t stream);
// dx from dy; the maximum's position found again in x (the first in the window).
cudaError_t LaunchPoolingBackward(ElementType type, const Pooling& pooling, Blend blend,
                                  Tensor dy, Tensor x, Tensor dx, cudaStream_t stream);

// Batch normalisation of a 4-D tensor over N, H and W per channel (`spatial`), or over N per
// (c, h, w). Scale, bias, means and variances are parameter tensors (one element per feature)
// in the computation's type (double for f64 data, float otherwise), their shapes as the
// feature's.
struct BatchNorm {
  bool spatial = true;
  double epsilon = 0;
};
struct BatchNormTraining {
  const void* scale = nullptr;
  const void* bias = nullptr;
  TensorShape params;
  double average_factor = 1;  // running = (1 - factor) running + factor batch statistic
  void* running_mean = nullptr;  // null: not updated
  void* running_variance = nullptr;  // unbiased variance
  void* save_mean = nullptr;  // null: not saved
  void* save_inv_std = nullptr;  // 1 / sqrt(biased variance + epsilon)
};
cudaError_t LaunchBatchNormTraining(ElementType type, const BatchNorm& bn, Blend blend, Tensor x,
                                    Tensor y, const BatchNormTraining& training,
                                    cudaStream_t stream);
cudaError_t LaunchBatchNormInference(ElementType type, const BatchNorm& bn, Blend blend, Tensor x,
                                     Tensor y, TensorShape params, const void* scale,
                                     const void* bias, const void* mean, const void* variance,
                                     cudaStream_t stream);
struct BatchNormGradients {
  Blend data, params;
  const void* scale = nullptr;
  TensorShape param_shape;
  void* d_scale = nullptr;
  void* d_bias = nullptr;
  const void* saved_mean = nullptr;  // both null: computed again from x
  const void* saved_inv_std = nullptr;
};
cudaError_t LaunchBatchNormBackward(ElementType type, const BatchNorm& bn, Tensor x, Tensor dy,
                                    Tensor dx, const BatchNormGradients& gradients,
                                    cudaStream_t stream);

// A pointwise operation of cuDNN's graphs and of cudnnOpTensor: y = op(alpha1 x) or
// op(alpha1 x, alpha2 b), plus beta y (y read only where beta is not 0), each operand broadcast
// to y's dimensions (a dimension of 1 repeats) and of its own type, computed in float (in double
// where the operation's precision says so).
enum class PointwiseMode : uint8_t {
  // Binary.
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  // Unary.
  kIdentity, kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kReciprocal, kRelu, kTanh, kSigmoid,
  kElu, kGelu, kGeluTanh, kSwish, kSoftplus,
};
constexpr bool IsBinary(PointwiseMode mode) { return mode <= PointwiseMode::kMin; }

// An operand: a tensor, or one value given at the call (cuDNN's by-value tensors).
struct PointwiseOperand {
  ElementType type = ElementType::kF32;
  TensorShape shape;
  const void* data = nullptr;
  bool by_value = false;
  double value = 0;
};
struct PointwiseProblem {
  PointwiseMode mode = PointwiseMode::kIdentity;
  bool in_double = false;
  double alpha1 = 1, alpha2 = 1, beta = 0;
  // RELU: x below lower becomes lower + slope (x - lower), above upper becomes upper.
  double relu_lower = 0, relu_upper = 1e308, relu_slope = 0;
  double elu_alpha = 1, softplus_beta = 1, swish_beta = 1;
  PointwiseOperand x, b;
  ElementType y_type = ElementType::kF32;
  TensorShape y_shape;
  void* y = nullptr;
};
cudaError_t LaunchPointwise(const PointwiseProblem& problem, cudaStream_t stream);

}  // namespace tally::libraries::kernels
