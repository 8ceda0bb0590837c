// cuDNN's handles and descriptors as the stand-in keeps them (live in registry.h's registries):
// what the application set, checked as cuDNN's documentation says, and the tensor shapes Tally's
// kernels take. A descriptor used before it was set is refused (BAD_PARAM_NOT_FINALIZED).
#pragma once

#include <cudnn.h>

#include <array>

#include "libraries/cudnn/registry.h"
#include "libraries/kernels/dnn_kernels.h"

namespace tally::libraries::cudnn {

// A handle: the state frameworks set before every call (the stream) lives in the application,
// so setting it costs no round trip.
struct Handle {
  static constexpr const char* kName = "the cuDNN handle";
  cudaStream_t stream = nullptr;
};

struct TensorDescriptor {
  static constexpr const char* kName = "the tensor descriptor";
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  kernels::TensorShape shape;
};

// A filter: K x C x spatial dimensions, stored as its format says.
struct FilterDescriptor {
  static constexpr const char* kName = "the filter descriptor";
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  kernels::TensorShape shape;  // dims in K, C, spatial order; strides from the format
};

struct ConvolutionDescriptor {
  static constexpr const char* kName = "the convolution descriptor";
  bool set = false;
  int spatial = 0;  // spatial dimensions
  std::array<int, kernels::kMaxRank - 2> pad{}, stride{}, dilation{};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnReorderType_t reorder = CUDNN_DEFAULT_REORDER;
};

struct ActivationDescriptor {
  static constexpr const char* kName = "the activation descriptor";
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0;
  double swish_beta = 1;
};

struct OpTensorDescriptor {
  static constexpr const char* kName = "the op-tensor descriptor";
  bool set = false;
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
};

struct PoolingDescriptor {
  static constexpr const char* kName = "the pooling descriptor";
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  int spatial = 0;
  std::array<int, kernels::kMaxRank - 2> window{}, pad{}, stride{};
};

// The live, set descriptor behind an application's handle (throws a Refusal otherwise).
Handle& FindHandle(cudnnHandle_t handle);
const TensorDescriptor& FindTensor(cudnnTensorDescriptor_t desc);
const FilterDescriptor& FindFilter(cudnnFilterDescriptor_t desc);
const ConvolutionDescriptor& FindConvolution(cudnnConvolutionDescriptor_t desc);
const ActivationDescriptor& FindActivation(cudnnActivationDescriptor_t desc);
const PoolingDescriptor& FindPooling(cudnnPoolingDescriptor_t desc);
const OpTensorDescriptor& FindOpTensor(cudnnOpTensorDescriptor_t desc);

// The bytes of one element of `type`; BAD_PARAM for an unknown type.
size_t ElementBytes(cudnnDataType_t type);
// Packed strides for `dims` (rank dimensions in N, C, spatial order) in `format`.
kernels::TensorShape PackedShape(int rank, const int* dims, cudnnTensorFormat_t format);
// Checks a tensor's rank and dimensions as cuDNN does (BAD_PARAM).
void CheckDimensions(int rank, const int* dims, int min_rank);

// A tensor of Tally's kernels: the descriptor's shape at `data` (BAD_PARAM_NULL_POINTER when
// null).
kernels::Tensor TensorAt(const TensorDescriptor& desc, const void* data, const char* what);
// Both descriptors describe the same dimensions and type (BAD_PARAM otherwise).
void RequireSameShape(const TensorDescriptor& a, const TensorDescriptor& b, const char* what);
// x and y of a call from one to the other element by element: found as FindTensor finds them,
// of the same dimensions and type (their strides, the layouts, may differ).
struct InAndOut {
  const TensorDescriptor& in;
  const TensorDescriptor& out;
};
InAndOut FindSameShape(cudnnTensorDescriptor_t x_desc, cudnnTensorDescriptor_t y_desc);

// A 4-D tensor (NOT_SUPPORTED for another rank).
void RequireRank4(const TensorDescriptor& desc, const char* what);

// The activation function Tally's kernels apply for the descriptor.
kernels::ActivationFunction ActivationFunctionOf(const ActivationDescriptor& desc);

// Writes a result the caller asked for (a null pointer: not wanted).
template <typename T>
void PutIfWanted(T* out, T value) {
  if (out != nullptr) *out = value;
}

}  // namespace tally::libraries::cudnn
