// cuDNN's convolution descriptors: create, set, get, destroy, output dimensions.
#include <algorithm>

#include "libraries/cudnn/convolution.h"

namespace tally::libraries::cudnn {
namespace {

void SetConvolution(cudnnConvolutionDescriptor_t desc, int spatial, const int* pad,
                    const int* stride, const int* dilation, cudnnConvolutionMode_t mode,
                    cudnnDataType_t compute) {
  ConvolutionDescriptor& conv = Live<ConvolutionDescriptor>::Find(desc);
  Require(spatial >= 1 && spatial <= kernels::kMaxRank - 2, CUDNN_STATUS_BAD_PARAM,
          "the number of spatial dimensions is out of range");
  RequireNotNull(pad, "the padding array");
  RequireNotNull(stride, "the stride array");
  RequireNotNull(dilation, "the dilation array");
  Require(mode == CUDNN_CONVOLUTION || mode == CUDNN_CROSS_CORRELATION, CUDNN_STATUS_BAD_PARAM,
          "unknown convolution mode");
  ElementBytes(compute);
  ConvolutionDescriptor updated = conv;  // group count, math and reorder types are kept
  updated.set = true;
  updated.spatial = spatial;
  for (int d = 0; d < spatial; ++d) {
    Require(pad[d] >= 0, CUDNN_STATUS_BAD_PARAM, "a padding is negative");
    Require(stride[d] > 0, CUDNN_STATUS_BAD_PARAM, "a stride is not positive");
    Require(dilation[d] > 0, CUDNN_STATUS_BAD_PARAM, "a dilation is not positive");
    updated.pad[d] = pad[d];
    updated.stride[d] = stride[d];
    updated.dilation[d] = dilation[d];
  }
  updated.mode = mode;
  updated.compute = compute;
  conv = updated;
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  return CudnnCall(__func__, [&] {
    const int pad[] = {pad_h, pad_w}, stride[] = {u, v}, dilation[] = {dilation_h, dilation_w};
    SetConvolution(desc, 2, pad, stride, dilation, mode, compute);
  });
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t desc, int* pad_h,
                                              int* pad_w, int* u, int* v, int* dilation_h,
                                              int* dilation_w, cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  return CudnnCall(__func__, [&] {
    const ConvolutionDescriptor& conv = FindConvolution(desc);
    Require(conv.spatial == 2, CUDNN_STATUS_BAD_PARAM, "the convolution is not 2-D");
    PutIfWanted(pad_h, conv.pad[0]);
    PutIfWanted(pad_w, conv.pad[1]);
    PutIfWanted(u, conv.stride[0]);
    PutIfWanted(v, conv.stride[1]);
    PutIfWanted(dilation_h, conv.dilation[0]);
    PutIfWanted(dilation_w, conv.dilation[1]);
    PutIfWanted(mode, conv.mode);
    PutIfWanted(compute, conv.compute);
  });
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc, int spatial,
                                              const int pad[], const int stride[],
                                              const int dilation[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  return CudnnCall(__func__,
                   [&] { SetConvolution(desc, spatial, pad, stride, dilation, mode, compute); });
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t desc,
                                              int requested, int* spatial, int pad[],
                                              int stride[], int dilation[],
                                              cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  return CudnnCall(__func__, [&] {
    const ConvolutionDescriptor& conv = FindConvolution(desc);
    Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested length is negative");
    PutIfWanted(spatial, conv.spatial);
    for (int d = 0; d < std::min(requested, conv.spatial); ++d) {
      if (pad != nullptr) pad[d] = conv.pad[d];
      if (stride != nullptr) stride[d] = conv.stride[d];
      if (dilation != nullptr) dilation[d] = conv.dilation[d];
    }
    PutIfWanted(mode, conv.mode);
    PutIfWanted(compute, conv.compute);
  });
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  return CudnnCall(__func__, [&] {
    Require(groups > 0, CUDNN_STATUS_BAD_PARAM, "the group count is not positive");
    Live<ConvolutionDescriptor>::Find(desc).groups = groups;
  });
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int* groups) {
  return CudnnCall(__func__, [&] {
    RequireNotNull(groups, "the group count pointer");
    *groups = Live<ConvolutionDescriptor>::Find(desc).groups;
  });
}

// The math type says which arithmetic cuDNN may use (tensor cores, TF32); Tally's kernels compute
// in f32 (or f64) whatever it says, which every math type allows.
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  return CudnnCall(__func__, [&] {
    Require(math >= CUDNN_DEFAULT_MATH && math <= CUDNN_FMA_MATH, CUDNN_STATUS_BAD_PARAM,
            "unknown math type");
    Live<ConvolutionDescriptor>::Find(desc).math = math;
  });
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t* math) {
  return CudnnCall(__func__, [&] {
    RequireNotNull(math, "the math type pointer");
    *math = Live<ConvolutionDescriptor>::Find(desc).math;
  });
}

cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t desc,
                                             cudnnReorderType_t reorder) {
  return CudnnCall(__func__, [&] {
    Require(reorder == CUDNN_DEFAULT_REORDER || reorder == CUDNN_NO_REORDER,
            CUDNN_STATUS_BAD_PARAM, "unknown reorder type");
    Live<ConvolutionDescriptor>::Find(desc).reorder = reorder;
  });
}

cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t desc,
                                             cudnnReorderType_t* reorder) {
  return CudnnCall(__func__, [&] {
    RequireNotNull(reorder, "the reorder type pointer");
    *reorder = Live<ConvolutionDescriptor>::Find(desc).reorder;
  });
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t desc,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int* n,
                                                    int* c, int* h, int* width) {
  return CudnnCall(__func__, [&] {
    const std::vector<int> dims = OutputDims(FindConvolution(desc), FindTensor(x), FindFilter(w));
    Require(dims.size() == 4, CUDNN_STATUS_BAD_PARAM, "the convolution is not 2-D");
    int* out[] = {n, c, h, width};
    for (int d = 0; d < 4; ++d) {
      RequireNotNull(out[d], "an output dimension pointer");
      *out[d] = dims[d];
    }
  });
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t desc,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int rank,
                                                    int dims[]) {
  return CudnnCall(__func__, [&] {
    const std::vector<int> out = OutputDims(FindConvolution(desc), FindTensor(x), FindFilter(w));
    Require(rank == static_cast<int>(out.size()), CUDNN_STATUS_BAD_PARAM,
            "the number of dimensions is not the tensor's");
    RequireNotNull(dims, "the dimension array");
    std::copy(out.begin(), out.end(), dims);
  });
}

}  // extern "C"
