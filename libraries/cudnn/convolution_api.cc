// cuDNN's convolutions: forward, backward data, backward filter, backward bias and the fused
// forward with bias and activation, with their algorithm queries and workspace sizes. Every
// algorithm of cuDNN runs as Tally's direct kernel (libraries/kernels/dnn_convolution.cu), so any
// choice computes the same, with no workspace; the queries offer one algorithm per direction.
#include "libraries/cudnn/convolution.h"

namespace tally::libraries::cudnn {
namespace {

// The convolution of the call, its tensors named as in the forward direction (x in, y out).
kernels::ConvolutionProblem Problem(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                    cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                                    cudnnTensorDescriptor_t y) {
  FindHandle(handle);
  return ProblemOf(FindTensor(x), FindFilter(w), FindConvolution(conv), FindTensor(y));
}

// How many algorithms cuDNN has for the direction whose algorithms are of type Algo.
template <typename Algo>
constexpr int kAlgorithms = 0;
template <>
constexpr int kAlgorithms<cudnnConvolutionFwdAlgo_t> = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
template <>
constexpr int kAlgorithms<cudnnConvolutionBwdDataAlgo_t> = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
template <>
constexpr int kAlgorithms<cudnnConvolutionBwdFilterAlgo_t> =
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;

// The convolution of a call that names one of its direction's algorithms.
template <typename Algo>
kernels::ConvolutionProblem ProblemWith(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                        cudnnFilterDescriptor_t w,
                                        cudnnConvolutionDescriptor_t conv,
                                        cudnnTensorDescriptor_t y, Algo algo) {
  static_assert(kAlgorithms<Algo> > 0, "Algo is not the algorithm type of a direction");
  const kernels::ConvolutionProblem problem = Problem(handle, x, w, conv, y);
  Require(algo >= 0 && algo < kAlgorithms<Algo>, CUDNN_STATUS_BAD_PARAM, "unknown algorithm");
  return problem;
}

// The answer of the algorithm queries (Get..._v7, Find..., Find...Ex): `algo`, which needs no
// workspace. Nothing is timed (every choice runs the same kernel), so its time is 0.
template <typename Perf, typename Algo>
void OfferAlgorithm(Algo algo, cudnnConvolutionDescriptor_t conv, int requested, int* returned,
                    Perf* results) {
  Require(requested > 0, CUDNN_STATUS_BAD_PARAM, "the requested count is not positive");
  RequireNotNull(returned, "the returned count pointer");
  RequireNotNull(results, "the result array");
  Perf perf{};
  perf.algo = algo;
  perf.status = CUDNN_STATUS_SUCCESS;
  perf.time = 0;
  perf.memory = 0;
  perf.determinism = CUDNN_DETERMINISTIC;
  perf.mathType = FindConvolution(conv).math;
  results[0] = perf;
  *returned = 1;
}

double Scalar(const void* scalar, const kernels::ConvolutionProblem& problem, const char* what) {
  return ReadScalar(scalar,
                    problem.type == kernels::ElementType::kF64 ? CUDNN_DATA_DOUBLE
                                                               : CUDNN_DATA_FLOAT,
                    what);
}

// The call's alpha and beta.
kernels::Blend BlendOf(const void* alpha, const void* beta,
                       const kernels::ConvolutionProblem& problem) {
  return {Scalar(alpha, problem, "alpha"), Scalar(beta, problem, "beta")};
}

void RequireData(const void* x, const void* w, const void* y) {
  RequireNotNull(x, "an input tensor");
  RequireNotNull(w, "the filter");
  RequireNotNull(y, "the output tensor");
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below
namespace kernels = tally::libraries::kernels;

extern "C" {

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  return CudnnCall(__func__, [&] {
    FindHandle(handle);
    RequireNotNull(count, "the count pointer");
    *count = 1;
  });
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  return cudnnGetConvolutionForwardAlgorithmMaxCount(handle, count);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                                 int* count) {
  return cudnnGetConvolutionForwardAlgorithmMaxCount(handle, count);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t handle,
                                                     const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t conv,
                                                     const cudnnTensorDescriptor_t y,
                                                     int requested, int* returned,
                                                     cudnnConvolutionFwdAlgoPerf_t* results) {
  return CudnnCall(__func__, [&] {
    Problem(handle, x, w, conv, y);
    OfferAlgorithm(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle,
                                                   const cudnnTensorDescriptor_t x,
                                                   const cudnnFilterDescriptor_t w,
                                                   const cudnnConvolutionDescriptor_t conv,
                                                   const cudnnTensorDescriptor_t y, int requested,
                                                   int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* results) {
  return cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, conv, y, requested, returned,
                                                results);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnFilterDescriptor_t w_desc, const void* w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t y_desc, void* y, int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* results, void* /*workspace*/, size_t /*workspace_bytes*/) {
  return CudnnCall(__func__, [&] {
    Problem(handle, x_desc, w_desc, conv, y_desc);
    RequireData(x, w, y);
    OfferAlgorithm(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle,
                                                      const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t conv,
                                                      const cudnnTensorDescriptor_t y,
                                                      cudnnConvolutionFwdAlgo_t algo,
                                                      size_t* size) {
  return CudnnCall(__func__, [&] {
    ProblemWith(handle, x, w, conv, y, algo);
    PutZeroSize(size);
  });
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t x_desc, const void* x,
                                      const cudnnFilterDescriptor_t w_desc, const void* w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* /*workspace*/,
                                      size_t /*workspace_bytes*/, const void* beta,
                                      const cudnnTensorDescriptor_t y_desc, void* y) {
  return CudnnCall(__func__, [&] {
    const kernels::ConvolutionProblem problem =
        ProblemWith(handle, x_desc, w_desc, conv, y_desc, algo);
    RequireData(x, w, y);
    kernels::ForwardEpilogue epilogue;
    epilogue.blend = BlendOf(alpha, beta, problem);
    epilogue.z = y;  // y = alpha conv + beta y
    epilogue.z_shape = problem.y;
    CheckLaunch(kernels::LaunchConvolutionForward(problem, x, w, y, epilogue,
                                                  FindHandle(handle).stream));
  });
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t x_desc,
    const void* x, const cudnnFilterDescriptor_t w_desc, const void* w,
    const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
    void* /*workspace*/, size_t /*workspace_bytes*/, const void* alpha2,
    const cudnnTensorDescriptor_t z_desc, const void* z, const cudnnTensorDescriptor_t bias_desc,
    const void* bias, const cudnnActivationDescriptor_t activation,
    const cudnnTensorDescriptor_t y_desc, void* y) {
  return CudnnCall(__func__, [&] {
    const kernels::ConvolutionProblem problem =
        ProblemWith(handle, x_desc, w_desc, conv, y_desc, algo);
    RequireData(x, w, y);
    const TensorDescriptor& z_tensor = FindTensor(z_desc);
    RequireSameShape(z_tensor, FindTensor(y_desc), "z and y");
    const TensorDescriptor& bias_tensor = FindTensor(bias_desc);
    Require(bias_tensor.shape.rank == z_tensor.shape.rank &&
                bias_tensor.shape.Elements() == problem.y.dims[1] &&
                bias_tensor.shape.dims[1] == problem.y.dims[1],
            CUDNN_STATUS_BAD_PARAM, "the bias is not 1 x K x 1 ... of y's rank");
    Require(bias_tensor.type == FindTensor(y_desc).type, CUDNN_STATUS_BAD_PARAM,
            "the bias's data type is not y's");
    RequireNotNull(bias, "the bias");
    kernels::ForwardEpilogue epilogue;
    epilogue.blend = {Scalar(alpha1, problem, "alpha1"), Scalar(alpha2, problem, "alpha2")};
    if (epilogue.blend.beta != 0) RequireNotNull(z, "z");
    epilogue.z = z;
    epilogue.z_shape = WithDepth(z_tensor.shape);
    epilogue.bias = bias;
    epilogue.bias_stride = bias_tensor.shape.strides[1];
    epilogue.activation = ActivationFunctionOf(FindActivation(activation));
    CheckLaunch(kernels::LaunchConvolutionForward(problem, x, w, y, epilogue,
                                                  FindHandle(handle).stream));
  });
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return CudnnCall(__func__, [&] {
    Problem(handle, dx, w, conv, dy);
    OfferAlgorithm(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, w, dy, conv, dx, requested,
                                                     returned, results);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc, const void* w,
    const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx_desc, void* dx,
    int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results,
    void* /*workspace*/, size_t /*workspace_bytes*/) {
  return CudnnCall(__func__, [&] {
    Problem(handle, dx_desc, w_desc, conv, dy_desc);
    RequireData(dy, w, dx);
    OfferAlgorithm(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* size) {
  return CudnnCall(__func__, [&] {
    ProblemWith(handle, dx, w, conv, dy, algo);
    PutZeroSize(size);
  });
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t w_desc, const void* w,
                                           const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo,
                                           void* /*workspace*/, size_t /*workspace_bytes*/,
                                           const void* beta,
                                           const cudnnTensorDescriptor_t dx_desc, void* dx) {
  return CudnnCall(__func__, [&] {
    const kernels::ConvolutionProblem problem =
        ProblemWith(handle, dx_desc, w_desc, conv, dy_desc, algo);
    RequireData(dy, w, dx);
    const kernels::Blend blend = BlendOf(alpha, beta, problem);
    CheckLaunch(kernels::LaunchConvolutionBackwardData(problem, w, dy, dx, blend,
                                                       FindHandle(handle).stream));
  });
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return CudnnCall(__func__, [&] {
    Problem(handle, x, dw, conv, dy);
    OfferAlgorithm(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, x, dy, conv, dw, requested,
                                                       returned, results);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw_desc, void* dw,
    int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results,
    void* /*workspace*/, size_t /*workspace_bytes*/) {
  return CudnnCall(__func__, [&] {
    Problem(handle, x_desc, dw_desc, conv, dy_desc);
    RequireData(x, dy, dw);
    OfferAlgorithm(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, conv, requested, returned, results);
  });
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* size) {
  return CudnnCall(__func__, [&] {
    ProblemWith(handle, x, dw, conv, dy, algo);
    PutZeroSize(size);
  });
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t x_desc, const void* x,
                                             const cudnnTensorDescriptor_t dy_desc,
                                             const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                             void* /*workspace*/, size_t /*workspace_bytes*/,
                                             const void* beta,
                                             const cudnnFilterDescriptor_t dw_desc, void* dw) {
  return CudnnCall(__func__, [&] {
    const kernels::ConvolutionProblem problem =
        ProblemWith(handle, x_desc, dw_desc, conv, dy_desc, algo);
    RequireData(x, dy, dw);
    const kernels::Blend blend = BlendOf(alpha, beta, problem);
    CheckLaunch(kernels::LaunchConvolutionBackwardFilter(problem, x, dy, dw, blend,
                                                         FindHandle(handle).stream));
  });
}

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                           const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           const void* beta,
                                           const cudnnTensorDescriptor_t db_desc, void* db) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& grad = FindTensor(dy_desc);
    const TensorDescriptor& bias = FindTensor(db_desc);
    Require(bias.type == grad.type && bias.shape.rank == grad.shape.rank &&
                bias.shape.dims[1] == grad.shape.dims[1] &&
                bias.shape.Elements() == grad.shape.dims[1],
            CUDNN_STATUS_BAD_PARAM, "db is not 1 x C x 1 x 1 of dy's type");
    const kernels::Blend blend{ReadScalar(alpha, grad.type, "alpha"), ReadScalar(beta, grad.type, "beta")};
    CheckLaunch(kernels::LaunchChannelSum(ElementTypeOf(grad.type), blend,
                                          TensorAt(grad, dy, "dy"), TensorAt(bias, db, "db"),
                                          live.stream));
  });
}

}  // extern "C"
