// cuDNN's batch normalisation: the parameter descriptor, training, inference and backward, and
// the Ex variants PyTorch calls (batch normalisation alone: the fused activation and addition
// are not written yet). No workspace or reserve space is needed.
#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {
namespace {

// The parameters' data type for data of `type`: double for double, float otherwise.
cudnnDataType_t ParamType(cudnnDataType_t type) {
  return type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

bool IsSpatial(cudnnBatchNormMode_t mode) {
  Require(mode == CUDNN_BATCHNORM_PER_ACTIVATION || mode == CUDNN_BATCHNORM_SPATIAL ||
              mode == CUDNN_BATCHNORM_SPATIAL_PERSISTENT,
          CUDNN_STATUS_BAD_PARAM, "unknown batch normalisation mode");
  return mode != CUDNN_BATCHNORM_PER_ACTIVATION;
}

kernels::BatchNorm BatchNormOf(cudnnBatchNormMode_t mode, double epsilon) {
  Require(epsilon >= CUDNN_BN_MIN_EPSILON, CUDNN_STATUS_BAD_PARAM,
          "epsilon is below CUDNN_BN_MIN_EPSILON");
  return {IsSpatial(mode), epsilon};
}

// x (4-D, of a type Tally's kernels take) and the parameter tensor as the mode derives it.
void CheckShapes(const kernels::BatchNorm& bn, const TensorDescriptor& x,
                 const TensorDescriptor& params) {
  RequireRank4(x, "batch normalisation");
  ElementTypeOf(x.type);
  const auto& dims = params.shape.dims;
  const bool derived = params.shape.rank == 4 && dims[0] == 1 && dims[1] == x.shape.dims[1] &&
                       dims[2] == (bn.spatial ? 1 : x.shape.dims[2]) &&
                       dims[3] == (bn.spatial ? 1 : x.shape.dims[3]);
  Require(derived, CUDNN_STATUS_BAD_PARAM,
          "the parameter tensor's dimensions are not the ones the mode derives from x");
  Require(params.type == ParamType(x.type), CUDNN_STATUS_BAD_PARAM,
          "the parameter tensor's data type is not double for double data, float otherwise");
}

void RequireBatchNormOnly(cudnnBatchNormOps_t ops) {
  if (ops != CUDNN_BATCHNORM_OPS_BN) {
    RefuseUnsupported("batch normalisation fused with an activation or an addition");
  }
}

// What training and inference check alike: x and y of one shape, the parameter tensor as the
// mode derives it from x, the scale and the bias.
struct ForwardCall {
  Handle& live;
  const TensorDescriptor& in;
  const TensorDescriptor& out;
  const TensorDescriptor& params;
  kernels::BatchNorm bn;
};

ForwardCall CheckForward(cudnnHandle_t handle, cudnnBatchNormMode_t mode, double epsilon,
                         cudnnTensorDescriptor_t x_desc, cudnnTensorDescriptor_t y_desc,
                         cudnnTensorDescriptor_t params_desc, const void* scale, const void* bias) {
  Handle& live = FindHandle(handle);
  const TensorDescriptor& in = FindTensor(x_desc);
  const TensorDescriptor& out = FindTensor(y_desc);
  const TensorDescriptor& params = FindTensor(params_desc);
  const kernels::BatchNorm bn = BatchNormOf(mode, epsilon);
  RequireSameShape(in, out, "x and y");
  CheckShapes(bn, in, params);
  RequireNotNull(scale, "the scale");
  RequireNotNull(bias, "the bias");
  return {live, in, out, params, bn};
}

void Training(cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
              cudnnTensorDescriptor_t x_desc, const void* x, cudnnTensorDescriptor_t y_desc,
              void* y, cudnnTensorDescriptor_t params_desc, const void* scale, const void* bias,
              double factor, void* running_mean, void* running_variance, double epsilon,
              void* save_mean, void* save_inv_std) {
  const auto [live, in, out, params, bn] =
      CheckForward(handle, mode, epsilon, x_desc, y_desc, params_desc, scale, bias);
  Require((running_mean == nullptr) == (running_variance == nullptr), CUDNN_STATUS_BAD_PARAM,
          "only one of the running mean and variance is given");
  Require((save_mean == nullptr) == (save_inv_std == nullptr), CUDNN_STATUS_BAD_PARAM,
          "only one of the saved mean and inverse variance is given");
  kernels::BatchNormTraining training;
  training.scale = scale;
  training.bias = bias;
  training.params = params.shape;
  training.average_factor = factor;
  training.running_mean = running_mean;
  training.running_variance = running_variance;
  training.save_mean = save_mean;
  training.save_inv_std = save_inv_std;
  CheckLaunch(kernels::LaunchBatchNormTraining(ElementTypeOf(in.type), bn,
                                               ReadBlend(alpha, beta, in.type),
                                               TensorAt(in, x, "x"), TensorAt(out, y, "y"),
                                               training, live.stream));
}

void Backward(cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha_data,
              const void* beta_data, const void* alpha_params, const void* beta_params,
              cudnnTensorDescriptor_t x_desc, const void* x, cudnnTensorDescriptor_t dy_desc,
              const void* dy, cudnnTensorDescriptor_t dx_desc, void* dx,
              cudnnTensorDescriptor_t params_desc, const void* scale, void* d_scale,
              void* d_bias, double epsilon, const void* saved_mean, const void* saved_inv_std) {
  Handle& live = FindHandle(handle);
  const TensorDescriptor& in = FindTensor(x_desc);
  const TensorDescriptor& out_grad = FindTensor(dy_desc);
  const TensorDescriptor& in_grad = FindTensor(dx_desc);
  const TensorDescriptor& params = FindTensor(params_desc);
  const kernels::BatchNorm bn = BatchNormOf(mode, epsilon);
  RequireSameShape(in, out_grad, "x and dy");
  RequireSameShape(in, in_grad, "x and dx");
  CheckShapes(bn, in, params);
  RequireNotNull(scale, "the scale");
  RequireNotNull(d_scale, "the scale gradient");
  RequireNotNull(d_bias, "the bias gradient");
  Require((saved_mean == nullptr) == (saved_inv_std == nullptr), CUDNN_STATUS_BAD_PARAM,
          "only one of the saved mean and inverse variance is given");
  kernels::BatchNormGradients gradients;
  gradients.data = ReadBlend(alpha_data, beta_data, in.type);
  gradients.params = ReadBlend(alpha_params, beta_params, in.type);
  gradients.scale = scale;
  gradients.param_shape = params.shape;
  gradients.d_scale = d_scale;
  gradients.d_bias = d_bias;
  gradients.saved_mean = saved_mean;
  gradients.saved_inv_std = saved_inv_std;
  CheckLaunch(kernels::LaunchBatchNormBackward(ElementTypeOf(in.type), bn, TensorAt(in, x, "x"),
                                               TensorAt(out_grad, dy, "dy"),
                                               TensorAt(in_grad, dx, "dx"), gradients,
                                               live.stream));
}

void NoSpace(cudnnHandle_t handle, cudnnBatchNormOps_t ops, size_t* size) {
  FindHandle(handle);
  RequireBatchNormOnly(ops);
  PutZeroSize(size);
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below
namespace kernels = tally::libraries::kernels;

extern "C" {

cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived,
                                            const cudnnTensorDescriptor_t x_desc,
                                            cudnnBatchNormMode_t mode) {
  return CudnnCall(__func__, [&] {
    const TensorDescriptor& x = FindTensor(x_desc);
    const bool spatial = IsSpatial(mode);
    TensorDescriptor& params = Live<TensorDescriptor>::Find(derived);
    int dims[kernels::kMaxRank] = {1, static_cast<int>(x.shape.dims[1])};
    for (int d = 2; d < x.shape.rank; ++d)
      dims[d] = spatial ? 1 : static_cast<int>(x.shape.dims[d]);
    params = {true, ParamType(x.type), PackedShape(x.shape.rank, dims, CUDNN_TENSOR_NCHW)};
  });
}

cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t params, const void* scale, const void* bias,
    double factor, void* running_mean, void* running_variance, double epsilon, void* save_mean,
    void* save_inv_variance) {
  return CudnnCall(__func__, [&] {
    Training(handle, mode, alpha, beta, x_desc, x, y_desc, y, params, scale, bias, factor,
             running_mean, running_variance, epsilon, save_mean, save_inv_variance);
  });
}

cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha,
    const void* beta, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t /*z_desc*/, const void* /*z*/,
    const cudnnTensorDescriptor_t y_desc, void* y, const cudnnTensorDescriptor_t params,
    const void* scale, const void* bias, double factor, void* running_mean,
    void* running_variance, double epsilon, void* save_mean, void* save_inv_variance,
    cudnnActivationDescriptor_t /*activation*/, void* /*workspace*/, size_t /*workspace_bytes*/,
    void* /*reserve*/, size_t /*reserve_bytes*/) {
  return CudnnCall(__func__, [&] {
    RequireBatchNormOnly(ops);
    Training(handle, mode, alpha, beta, x_desc, x, y_desc, y, params, scale, bias, factor,
             running_mean, running_variance, epsilon, save_mean, save_inv_variance);
  });
}

cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t params_desc, const void* scale, const void* bias,
    const void* mean, const void* variance, double epsilon) {
  return CudnnCall(__func__, [&] {
    const auto [live, in, out, params, bn] =
        CheckForward(handle, mode, epsilon, x_desc, y_desc, params_desc, scale, bias);
    RequireNotNull(mean, "the estimated mean");
    RequireNotNull(variance, "the estimated variance");
    CheckLaunch(kernels::LaunchBatchNormInference(
        ElementTypeOf(in.type), bn, ReadBlend(alpha, beta, in.type), TensorAt(in, x, "x"),
        TensorAt(out, y, "y"), params.shape, scale, bias, mean, variance, live.stream));
  });
}

cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha_data,
    const void* beta_data, const void* alpha_params, const void* beta_params,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t dy_desc,
    const void* dy, const cudnnTensorDescriptor_t dx_desc, void* dx,
    const cudnnTensorDescriptor_t params, const void* scale, void* d_scale, void* d_bias,
    double epsilon, const void* saved_mean, const void* saved_inv_variance) {
  return CudnnCall(__func__, [&] {
    Backward(handle, mode, alpha_data, beta_data, alpha_params, beta_params, x_desc, x, dy_desc,
             dy, dx_desc, dx, params, scale, d_scale, d_bias, epsilon, saved_mean,
             saved_inv_variance);
  });
}

cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const void* alpha_data, const void* beta_data, const void* alpha_params,
    const void* beta_params, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t /*y_desc*/, const void* /*y*/,
    const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnTensorDescriptor_t /*dz_desc*/, void* /*dz*/,
    const cudnnTensorDescriptor_t dx_desc, void* dx, const cudnnTensorDescriptor_t params,
    const void* scale, const void* /*bias*/, void* d_scale, void* d_bias, double epsilon,
    const void* saved_mean, const void* saved_inv_variance,
    cudnnActivationDescriptor_t /*activation*/, void* /*workspace*/, size_t /*workspace_bytes*/,
    void* /*reserve*/, size_t /*reserve_bytes*/) {
  return CudnnCall(__func__, [&] {
    RequireBatchNormOnly(ops);
    Backward(handle, mode, alpha_data, beta_data, alpha_params, beta_params, x_desc, x, dy_desc,
             dy, dx_desc, dx, params, scale, d_scale, d_bias, epsilon, saved_mean,
             saved_inv_variance);
  });
}

cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t /*mode*/, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t /*x*/, const cudnnTensorDescriptor_t /*z*/,
    const cudnnTensorDescriptor_t /*y*/, const cudnnTensorDescriptor_t /*params*/,
    const cudnnActivationDescriptor_t /*activation*/, size_t* size) {
  return CudnnCall(__func__, [&] { NoSpace(handle, ops, size); });
}

cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t /*mode*/, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t /*x*/, const cudnnTensorDescriptor_t /*y*/,
    const cudnnTensorDescriptor_t /*dy*/, const cudnnTensorDescriptor_t /*dz*/,
    const cudnnTensorDescriptor_t /*dx*/, const cudnnTensorDescriptor_t /*params*/,
    const cudnnActivationDescriptor_t /*activation*/, size_t* size) {
  return CudnnCall(__func__, [&] { NoSpace(handle, ops, size); });
}

cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t /*mode*/, cudnnBatchNormOps_t ops,
    const cudnnActivationDescriptor_t /*activation*/, const cudnnTensorDescriptor_t /*x*/,
    size_t* size) {
  return CudnnCall(__func__, [&] { NoSpace(handle, ops, size); });
}

}  // extern "C"
