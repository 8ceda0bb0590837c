// cuDNN's pooling: descriptors, output dimensions, forward and backward (2-D).
#include <algorithm>
#include <vector>

#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {
namespace {

void SetPooling(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode, cudnnNanPropagation_t nan,
                int spatial, const int* window, const int* pad, const int* stride) {
  PoolingDescriptor& pooling = Live<PoolingDescriptor>::Find(desc);
  Require(mode == CUDNN_POOLING_MAX || mode == CUDNN_POOLING_MAX_DETERMINISTIC ||
              mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ||
              mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
          CUDNN_STATUS_BAD_PARAM, "unknown pooling mode");
  Require(nan == CUDNN_NOT_PROPAGATE_NAN || nan == CUDNN_PROPAGATE_NAN, CUDNN_STATUS_BAD_PARAM,
          "unknown NaN propagation");
  Require(spatial >= 1 && spatial <= kernels::kMaxRank - 2, CUDNN_STATUS_BAD_PARAM,
          "the number of spatial dimensions is out of range");
  RequireNotNull(window, "the window array");
  RequireNotNull(pad, "the padding array");
  RequireNotNull(stride, "the stride array");
  PoolingDescriptor updated;
  updated.set = true;
  updated.mode = mode;
  updated.nan = nan;
  updated.spatial = spatial;
  for (int d = 0; d < spatial; ++d) {
    Require(window[d] > 0 && stride[d] > 0, CUDNN_STATUS_BAD_PARAM,
            "a window or stride is not positive");
    // A window entirely in the padding would pool nothing.
    Require(pad[d] >= 0 && pad[d] < window[d], CUDNN_STATUS_BAD_PARAM,
            "a padding is negative or not smaller than the window");
    updated.window[d] = window[d];
    updated.pad[d] = pad[d];
    updated.stride[d] = stride[d];
  }
  pooling = updated;
}

std::vector<int> OutputDims(const PoolingDescriptor& pooling, const TensorDescriptor& x) {
  Require(x.shape.rank == pooling.spatial + 2, CUDNN_STATUS_BAD_PARAM,
          "the tensor and the pooling differ in their number of dimensions");
  std::vector<int> dims = {static_cast<int>(x.shape.dims[0]), static_cast<int>(x.shape.dims[1])};
  for (int d = 0; d < pooling.spatial; ++d) {
    const int64_t padded = x.shape.dims[d + 2] + 2 * int64_t{pooling.pad[d]};
    Require(padded >= pooling.window[d], CUDNN_STATUS_BAD_PARAM,
            "the window is larger than the padded input");
    dims.push_back(static_cast<int>(1 + (padded - pooling.window[d]) / pooling.stride[d]));
  }
  return dims;
}

// The pooling of x into y for Tally's kernels: y has the output's dimensions, both 4-D.
kernels::Pooling PoolingOf(const PoolingDescriptor& pooling, const TensorDescriptor& x,
                           const TensorDescriptor& y) {
  const std::vector<int> dims = OutputDims(pooling, x);
  bool fits = y.shape.rank == x.shape.rank && y.type == x.type;
  for (int d = 0; fits && d < y.shape.rank; ++d) fits = y.shape.dims[d] == dims[d];
  Require(fits, CUDNN_STATUS_BAD_PARAM,
          "the output tensor's type or dimensions are not the pooling's output");
  RequireRank4(x, "pooling");
  kernels::Pooling out;
  out.mode = pooling.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                 ? kernels::PoolingMode::kAverageWithPadding
             : pooling.mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
                 ? kernels::PoolingMode::kAverageWithoutPadding
                 : kernels::PoolingMode::kMax;
  for (int d = 0; d < 2; ++d) {
    out.window[d] = pooling.window[d];
    out.pad[d] = pooling.pad[d];
    out.stride[d] = pooling.stride[d];
  }
  return out;
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below
namespace kernels = tally::libraries::kernels;

extern "C" {

cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int window_h, int window_w,
                                          int pad_h, int pad_w, int stride_h, int stride_w) {
  return CudnnCall(__func__, [&] {
    const int window[] = {window_h, window_w}, pad[] = {pad_h, pad_w},
              stride[] = {stride_h, stride_w};
    SetPooling(desc, mode, nan, 2, window, pad, stride);
  });
}

cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t desc,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* window_h, int* window_w, int* pad_h, int* pad_w,
                                          int* stride_h, int* stride_w) {
  return CudnnCall(__func__, [&] {
    const PoolingDescriptor& pooling = FindPooling(desc);
    Require(pooling.spatial == 2, CUDNN_STATUS_BAD_PARAM, "the pooling is not 2-D");
    PutIfWanted(mode, pooling.mode);
    PutIfWanted(nan, pooling.nan);
    PutIfWanted(window_h, pooling.window[0]);
    PutIfWanted(window_w, pooling.window[1]);
    PutIfWanted(pad_h, pooling.pad[0]);
    PutIfWanted(pad_w, pooling.pad[1]);
    PutIfWanted(stride_h, pooling.stride[0]);
    PutIfWanted(stride_w, pooling.stride[1]);
  });
}

cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t desc,
                                          const cudnnPoolingMode_t mode,
                                          const cudnnNanPropagation_t nan, int spatial,
                                          const int window[], const int pad[],
                                          const int stride[]) {
  return CudnnCall(__func__, [&] { SetPooling(desc, mode, nan, spatial, window, pad, stride); });
}

cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t desc, int requested,
                                          cudnnPoolingMode_t* mode, cudnnNanPropagation_t* nan,
                                          int* spatial, int window[], int pad[], int stride[]) {
  return CudnnCall(__func__, [&] {
    const PoolingDescriptor& pooling = FindPooling(desc);
    Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested length is negative");
    PutIfWanted(mode, pooling.mode);
    PutIfWanted(nan, pooling.nan);
    PutIfWanted(spatial, pooling.spatial);
    for (int d = 0; d < std::min(requested, pooling.spatial); ++d) {
      if (window != nullptr) window[d] = pooling.window[d];
      if (pad != nullptr) pad[d] = pooling.pad[d];
      if (stride != nullptr) stride[d] = pooling.stride[d];
    }
  });
}

cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t desc,
                                                const cudnnTensorDescriptor_t x, int* n, int* c,
                                                int* h, int* w) {
  return CudnnCall(__func__, [&] {
    const std::vector<int> dims = OutputDims(FindPooling(desc), FindTensor(x));
    Require(dims.size() == 4, CUDNN_STATUS_BAD_PARAM, "the pooling is not 2-D");
    int* out[] = {n, c, h, w};
    for (int d = 0; d < 4; ++d) {
      RequireNotNull(out[d], "an output dimension pointer");
      *out[d] = dims[d];
    }
  });
}

cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t desc,
                                                const cudnnTensorDescriptor_t x, int rank,
                                                int dims[]) {
  return CudnnCall(__func__, [&] {
    const std::vector<int> out = OutputDims(FindPooling(desc), FindTensor(x));
    Require(rank == static_cast<int>(out.size()), CUDNN_STATUS_BAD_PARAM,
            "the number of dimensions is not the tensor's");
    RequireNotNull(dims, "the dimension array");
    std::copy(out.begin(), out.end(), dims);
  });
}

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t desc,
                                  const void* alpha, const cudnnTensorDescriptor_t x_desc,
                                  const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t y_desc, void* y) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& in = FindTensor(x_desc);
    const TensorDescriptor& out = FindTensor(y_desc);
    const kernels::Pooling pooling = PoolingOf(FindPooling(desc), in, out);
    CheckLaunch(kernels::LaunchPoolingForward(ElementTypeOf(in.type), pooling,
                                              ReadBlend(alpha, beta, in.type),
                                              TensorAt(in, x, "x"), TensorAt(out, y, "y"),
                                              live.stream));
  });
}

// y is not needed: the maximum's position is found again in x.
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t desc,
                                   const void* alpha, const cudnnTensorDescriptor_t y_desc,
                                   const void* /*y*/, const cudnnTensorDescriptor_t dy_desc,
                                   const void* dy, const cudnnTensorDescriptor_t x_desc,
                                   const void* x, const void* beta,
                                   const cudnnTensorDescriptor_t dx_desc, void* dx) {
  return CudnnCall(__func__, [&] {
    Handle& live = FindHandle(handle);
    const TensorDescriptor& in = FindTensor(x_desc);
    const TensorDescriptor& out_grad = FindTensor(dy_desc);
    const TensorDescriptor& in_grad = FindTensor(dx_desc);
    RequireSameShape(FindTensor(y_desc), out_grad, "y and dy");
    RequireSameShape(in, in_grad, "x and dx");
    const kernels::Pooling pooling = PoolingOf(FindPooling(desc), in, out_grad);
    CheckLaunch(kernels::LaunchPoolingBackward(
        ElementTypeOf(in.type), pooling, ReadBlend(alpha, beta, in.type),
        TensorAt(out_grad, dy, "dy"), TensorAt(in, x, "x"), TensorAt(in_grad, dx, "dx"),
        live.stream));
  });
}

}  // extern "C"
