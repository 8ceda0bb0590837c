// Finding live descriptors, and the shapes Tally's kernels take (descriptors.h).
#include "libraries/cudnn/descriptors.h"

#include <string>

namespace tally::libraries::cudnn {
Handle& FindHandle(cudnnHandle_t handle) { return Live<Handle>::Find(handle); }
const TensorDescriptor& FindTensor(cudnnTensorDescriptor_t desc) {
  return Live<TensorDescriptor>::FindSet(desc);
}
const FilterDescriptor& FindFilter(cudnnFilterDescriptor_t desc) {
  return Live<FilterDescriptor>::FindSet(desc);
}
const ConvolutionDescriptor& FindConvolution(cudnnConvolutionDescriptor_t desc) {
  return Live<ConvolutionDescriptor>::FindSet(desc);
}
const ActivationDescriptor& FindActivation(cudnnActivationDescriptor_t desc) {
  return Live<ActivationDescriptor>::FindSet(desc);
}
const PoolingDescriptor& FindPooling(cudnnPoolingDescriptor_t desc) {
  return Live<PoolingDescriptor>::FindSet(desc);
}

const OpTensorDescriptor& FindOpTensor(cudnnOpTensorDescriptor_t desc) {
  return Live<OpTensorDescriptor>::FindSet(desc);
}

size_t ElementBytes(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_DOUBLE:
    case CUDNN_DATA_INT64:
      return 8;
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
    case CUDNN_DATA_INT8x4:
    case CUDNN_DATA_UINT8x4:
      return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    case CUDNN_DATA_INT8:
    case CUDNN_DATA_UINT8:
    case CUDNN_DATA_BOOLEAN:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2:
      return 1;
    case CUDNN_DATA_INT8x32:
      return 32;
    default:
      break;
  }
  Refuse(CUDNN_STATUS_BAD_PARAM, "unknown data type " + std::to_string(type));
}

kernels::TensorShape PackedShape(int rank, const int* dims, cudnnTensorFormat_t format) {
  kernels::TensorShape shape;
  shape.rank = rank;
  for (int d = 0; d < rank; ++d) shape.dims[d] = dims[d];
  if (format == CUDNN_TENSOR_NCHW) {
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      shape.strides[d] = stride;
      stride *= dims[d];
    }
  } else if (format == CUDNN_TENSOR_NHWC) {
    // C fastest, then the spatial dimensions from the last, then N.
    int64_t stride = 1;
    shape.strides[1] = stride;
    stride *= dims[1];
    for (int d = rank - 1; d >= 2; --d) {
      shape.strides[d] = stride;
      stride *= dims[d];
    }
    shape.strides[0] = stride;
  } else if (format == CUDNN_TENSOR_NCHW_VECT_C) {
    RefuseUnsupported("the CUDNN_TENSOR_NCHW_VECT_C layout", CUDNN_STATUS_NOT_SUPPORTED_LAYOUT);
  } else {
    Refuse(CUDNN_STATUS_BAD_PARAM, "unknown tensor format " + std::to_string(format));
  }
  return shape;
}

void CheckDimensions(int rank, const int* dims, int min_rank) {
  Require(rank >= min_rank && rank <= CUDNN_DIM_MAX, CUDNN_STATUS_BAD_PARAM,
          "the number of dimensions is out of range");
  RequireNotNull(dims, "the dimension array");
  for (int d = 0; d < rank; ++d) {
    Require(dims[d] > 0, CUDNN_STATUS_BAD_PARAM, "a dimension is not positive");
  }
}

kernels::Tensor TensorAt(const TensorDescriptor& desc, const void* data, const char* what) {
  RequireNotNull(data, what);
  return {desc.shape, const_cast<void*>(data)};
}

void RequireSameShape(const TensorDescriptor& a, const TensorDescriptor& b, const char* what) {
  bool same = a.type == b.type && a.shape.rank == b.shape.rank;
  for (int d = 0; same && d < a.shape.rank; ++d) same = a.shape.dims[d] == b.shape.dims[d];
  if (!same) Refuse(CUDNN_STATUS_BAD_PARAM, std::string(what) + " differ in type or dimensions");
}

InAndOut FindSameShape(cudnnTensorDescriptor_t x_desc, cudnnTensorDescriptor_t y_desc) {
  const TensorDescriptor& in = FindTensor(x_desc);
  const TensorDescriptor& out = FindTensor(y_desc);
  RequireSameShape(in, out, "x and y");
  return {in, out};
}

void RequireRank4(const TensorDescriptor& desc, const char* what) {
  if (desc.shape.rank != 4) {
    RefuseUnsupported(std::string(what) + " of " + std::to_string(desc.shape.rank) +
                          " dimensions (Tally's kernels take 4-D tensors here)",
                      CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
  }
}

kernels::ActivationFunction ActivationFunctionOf(const ActivationDescriptor& desc) {
  using kernels::ActivationMode;
  switch (desc.mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return {ActivationMode::kSigmoid, 0};
    case CUDNN_ACTIVATION_RELU:
      return {ActivationMode::kRelu, 0};
    case CUDNN_ACTIVATION_TANH:
      return {ActivationMode::kTanh, 0};
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return {ActivationMode::kClippedRelu, desc.coef};
    case CUDNN_ACTIVATION_ELU:
      return {ActivationMode::kElu, desc.coef};
    case CUDNN_ACTIVATION_IDENTITY:
      return {ActivationMode::kIdentity, 0};
    case CUDNN_ACTIVATION_SWISH:
      return {ActivationMode::kSwish, desc.swish_beta};
  }
  Refuse(CUDNN_STATUS_BAD_PARAM, "unknown activation mode");
}

}  // namespace tally::libraries::cudnn
