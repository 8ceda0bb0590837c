// cuDNN's activations with their descriptors, and softmax.
#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {
namespace {

kernels::Softmax SoftmaxOf(cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode) {
  Require(algo == CUDNN_SOFTMAX_FAST || algo == CUDNN_SOFTMAX_ACCURATE || algo == CUDNN_SOFTMAX_LOG,
          CUDNN_STATUS_BAD_PARAM, "unknown softmax algorithm");
  Require(mode == CUDNN_SOFTMAX_MODE_INSTANCE || mode == CUDNN_SOFTMAX_MODE_CHANNEL,
          CUDNN_STATUS_BAD_PARAM, "unknown softmax mode");
  return {mode == CUDNN_SOFTMAX_MODE_INSTANCE, algo != CUDNN_SOFTMAX_FAST,
          algo == CUDNN_SOFTMAX_LOG};
}

// The function of an activation descriptor outside a fused convolution: IDENTITY is for
// cudnnConvolutionBiasActivationForward only, as cuDNN's documentation says.
kernels::ActivationFunction StandaloneActivation(cudnnActivationDescriptor_t desc) {
  const ActivationDescriptor& activation = FindActivation(desc);
  Require(activation.mode != CUDNN_ACTIVATION_IDENTITY, CUDNN_STATUS_BAD_PARAM,
          "the identity activation is for the fused convolution only");
  return ActivationFunctionOf(activation);
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below
namespace kernels = tally::libraries::kernels;

extern "C" {

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t desc,
                                           cudnnActivationMode_t mode, cudnnNanPropagation_t nan,
                                           double coef) {
  return CudnnCall(__func__, [&] {
    ActivationDescriptor& activation = Live<ActivationDescriptor>::Find(desc);
    Require(nan == CUDNN_NOT_PROPAGATE_NAN || nan == CUDNN_PROPAGATE_NAN, CUDNN_STATUS_BAD_PARAM,
            "unknown NaN propagation");
    ActivationDescriptor updated = activation;  // Swish's beta is kept
    updated.mode = mode;
    ActivationFunctionOf(updated);  // a known mode
    updated.set = true;
    updated.nan = nan;
    updated.coef = coef;
    activation = updated;
  });
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t desc,
                                           cudnnActivationMode_t* mode,
                                           cudnnNanPropagation_t* nan, double* coef) {
  return CudnnCall(__func__, [&] {
    const ActivationDescriptor& activation = FindActivation(desc);
    PutIfWanted(mode, activation.mode);
    PutIfWanted(nan, activation.nan);
    PutIfWanted(coef, activation.coef);
  });
}

cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t desc,
                                                    double beta) {
  return CudnnCall(__func__, [&] { Live<ActivationDescriptor>::Find(desc).swish_beta = beta; });
}

cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t desc,
                                                    double* beta) {
  return CudnnCall(__func__, [&] {
    RequireNotNull(beta, "the beta pointer");
    *beta = Live<ActivationDescriptor>::Find(desc).swish_beta;
  });
}

cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activation,
                                     const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                     const void* x, const void* beta,
                                     const cudnnTensorDescriptor_t y_desc, void* y) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const auto [in, out] = FindSameShape(x_desc, y_desc);
    CheckLaunch(kernels::LaunchActivationForward(
        ElementTypeOf(in.type), StandaloneActivation(activation), ReadBlend(alpha, beta, in.type),
        TensorAt(in, x, "x"), TensorAt(out, y, "y"), live.stream));
  });
}

cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle,
                                      cudnnActivationDescriptor_t activation, const void* alpha,
                                      const cudnnTensorDescriptor_t y_desc, const void* y,
                                      const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                      const cudnnTensorDescriptor_t x_desc, const void* x,
                                      const void* beta, const cudnnTensorDescriptor_t dx_desc,
                                      void* dx) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& out = FindTensor(y_desc);
    const TensorDescriptor& out_grad = FindTensor(dy_desc);
    const TensorDescriptor& in = FindTensor(x_desc);
    const TensorDescriptor& in_grad = FindTensor(dx_desc);
    RequireSameShape(out, out_grad, "y and dy");
    RequireSameShape(out, in, "y and x");
    RequireSameShape(out, in_grad, "y and dx");
    CheckLaunch(kernels::LaunchActivationBackward(
        ElementTypeOf(in.type), StandaloneActivation(activation), ReadBlend(alpha, beta, in.type),
        TensorAt(out, y, "y"), TensorAt(out_grad, dy, "dy"), TensorAt(in, x, "x"),
        TensorAt(in_grad, dx, "dx"), live.stream));
  });
}

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                  cudnnSoftmaxMode_t mode, const void* alpha,
                                  const cudnnTensorDescriptor_t x_desc, const void* x,
                                  const void* beta, const cudnnTensorDescriptor_t y_desc,
                                  void* y) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const auto [in, out] = FindSameShape(x_desc, y_desc);
    RequireRank4(in, "softmax");
    CheckLaunch(kernels::LaunchSoftmaxForward(ElementTypeOf(in.type), SoftmaxOf(algo, mode),
                                              ReadBlend(alpha, beta, in.type),
                                              TensorAt(in, x, "x"), TensorAt(out, y, "y"),
                                              live.stream));
  });
}

cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                   cudnnSoftmaxMode_t mode, const void* alpha,
                                   const cudnnTensorDescriptor_t y_desc, const void* y,
                                   const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                   const void* beta, const cudnnTensorDescriptor_t dx_desc,
                                   void* dx) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& out = FindTensor(y_desc);
    const TensorDescriptor& out_grad = FindTensor(dy_desc);
    const TensorDescriptor& in_grad = FindTensor(dx_desc);
    RequireSameShape(out, out_grad, "y and dy");
    RequireSameShape(out, in_grad, "y and dx");
    RequireRank4(out, "softmax");
    CheckLaunch(kernels::LaunchSoftmaxBackward(
        ElementTypeOf(out.type), SoftmaxOf(algo, mode), ReadBlend(alpha, beta, out.type),
        TensorAt(out, y, "y"), TensorAt(out_grad, dy, "dy"), TensorAt(in_grad, dx, "dx"),
        live.stream));
  });
}

}  // extern "C"
