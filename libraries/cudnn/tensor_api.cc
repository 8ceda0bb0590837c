// cuDNN's tensor and filter descriptors: create, set, get, destroy, sizes.
#include <algorithm>

#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {
namespace {

void SetTensor(cudnnTensorDescriptor_t desc, cudnnDataType_t type, int rank, const int* dims,
               const int* strides) {
  TensorDescriptor& tensor = Live<TensorDescriptor>::Find(desc);
  ElementBytes(type);  // a known type
  CheckDimensions(rank, dims, 3);
  RequireNotNull(strides, "the stride array");
  kernels::TensorShape shape;
  shape.rank = rank;
  for (int d = 0; d < rank; ++d) {
    Require(strides[d] > 0, CUDNN_STATUS_BAD_PARAM, "a stride is not positive");
    shape.dims[d] = dims[d];
    shape.strides[d] = strides[d];
  }
  tensor = {true, type, shape};
}

void SetTensorPacked(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                     cudnnDataType_t type, int rank, const int* dims) {
  TensorDescriptor& tensor = Live<TensorDescriptor>::Find(desc);
  ElementBytes(type);
  CheckDimensions(rank, dims, 3);
  tensor = {true, type, PackedShape(rank, dims, format)};
}

void SetFilter(cudnnFilterDescriptor_t desc, cudnnDataType_t type, cudnnTensorFormat_t format,
               int rank, const int* dims) {
  FilterDescriptor& filter = Live<FilterDescriptor>::Find(desc);
  ElementBytes(type);
  CheckDimensions(rank, dims, 3);
  filter = {true, type, format, PackedShape(rank, dims, format)};
}

// The bytes from a tensor's first element to one past its last.
size_t SpanBytes(const kernels::TensorShape& shape, cudnnDataType_t type) {
  int64_t last = 0;
  for (int d = 0; d < shape.rank; ++d) last += (shape.dims[d] - 1) * shape.strides[d];
  return static_cast<size_t>(last + 1) * ElementBytes(type);
}

}  // namespace
}  // namespace tally::libraries::cudnn

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  return CudnnCall(__func__, [&] {
    const int dims[] = {n, c, h, w};
    SetTensorPacked(desc, format, type, 4, dims);
  });
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                                           int n, int c, int h, int w, int n_stride,
                                           int c_stride, int h_stride, int w_stride) {
  return CudnnCall(__func__, [&] {
    const int dims[] = {n, c, h, w};
    const int strides[] = {n_stride, c_stride, h_stride, w_stride};
    SetTensor(desc, type, 4, dims, strides);
  });
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc,
                                         cudnnDataType_t* type, int* n, int* c, int* h, int* w,
                                         int* n_stride, int* c_stride, int* h_stride,
                                         int* w_stride) {
  return CudnnCall(__func__, [&] {
    const TensorDescriptor& tensor = FindTensor(desc);
    Require(tensor.shape.rank == 4, CUDNN_STATUS_BAD_PARAM, "the tensor is not 4-D");
    int* dims[] = {n, c, h, w};
    int* strides[] = {n_stride, c_stride, h_stride, w_stride};
    PutIfWanted(type, tensor.type);
    for (int d = 0; d < 4; ++d) {
      PutIfWanted(dims[d], static_cast<int>(tensor.shape.dims[d]));
      PutIfWanted(strides[d], static_cast<int>(tensor.shape.strides[d]));
    }
  });
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                                         int rank, const int dims[], const int strides[]) {
  return CudnnCall(__func__, [&] { SetTensor(desc, type, rank, dims, strides); });
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t desc,
                                           cudnnTensorFormat_t format, cudnnDataType_t type,
                                           int rank, const int dims[]) {
  return CudnnCall(__func__, [&] { SetTensorPacked(desc, format, type, rank, dims); });
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc, int requested,
                                         cudnnDataType_t* type, int* rank, int dims[],
                                         int strides[]) {
  return CudnnCall(__func__, [&] {
    const TensorDescriptor& tensor = FindTensor(desc);
    Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested number of dimensions is negative");
    PutIfWanted(type, tensor.type);
    PutIfWanted(rank, tensor.shape.rank);
    for (int d = 0; d < std::min(requested, tensor.shape.rank); ++d) {
      if (dims != nullptr) dims[d] = static_cast<int>(tensor.shape.dims[d]);
      if (strides != nullptr) strides[d] = static_cast<int>(tensor.shape.strides[d]);
    }
  });
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t desc, size_t* size) {
  return CudnnCall(__func__, [&] {
    const TensorDescriptor& tensor = FindTensor(desc);
    RequireNotNull(size, "the size pointer");
    *size = SpanBytes(tensor.shape, tensor.type);
  });
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  return CudnnCall(__func__, [&] {
    const int dims[] = {k, c, h, w};
    SetFilter(desc, type, format, 4, dims);
  });
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t desc, cudnnDataType_t* type,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h,
                                         int* w) {
  return CudnnCall(__func__, [&] {
    const FilterDescriptor& filter = FindFilter(desc);
    Require(filter.shape.rank == 4, CUDNN_STATUS_BAD_PARAM, "the filter is not 4-D");
    int* dims[] = {k, c, h, w};
    PutIfWanted(type, filter.type);
    PutIfWanted(format, filter.format);
    for (int d = 0; d < 4; ++d) PutIfWanted(dims[d], static_cast<int>(filter.shape.dims[d]));
  });
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int rank, const int dims[]) {
  return CudnnCall(__func__, [&] { SetFilter(desc, type, format, rank, dims); });
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t desc, int requested,
                                         cudnnDataType_t* type, cudnnTensorFormat_t* format,
                                         int* rank, int dims[]) {
  return CudnnCall(__func__, [&] {
    const FilterDescriptor& filter = FindFilter(desc);
    Require(requested >= 0, CUDNN_STATUS_BAD_PARAM, "the requested number of dimensions is negative");
    PutIfWanted(type, filter.type);
    PutIfWanted(format, filter.format);
    PutIfWanted(rank, filter.shape.rank);
    for (int d = 0; dims != nullptr && d < std::min(requested, filter.shape.rank); ++d) {
      dims[d] = static_cast<int>(filter.shape.dims[d]);
    }
  });
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t desc, size_t* size) {
  return CudnnCall(__func__, [&] {
    const FilterDescriptor& filter = FindFilter(desc);
    RequireNotNull(size, "the size pointer");
    *size = SpanBytes(filter.shape, filter.type);
  });
}

}  // extern "C"
