// Convolution problems from cuDNN's descriptors (convolution.h).
#include "libraries/cudnn/convolution.h"

#include <string>

namespace tally::libraries::cudnn {

void CheckComputeType(cudnnDataType_t data, cudnnDataType_t compute) {
  const bool supported = data == CUDNN_DATA_DOUBLE ? compute == CUDNN_DATA_DOUBLE
                         : data == CUDNN_DATA_HALF ? compute == CUDNN_DATA_FLOAT ||
                                                         compute == CUDNN_DATA_HALF
                                                   : compute == CUDNN_DATA_FLOAT;
  if (!supported) {
    RefuseUnsupported("data type " + std::to_string(data) + " with compute type " +
                          std::to_string(compute),
                      CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  }
}

std::vector<int> OutputDims(const ConvolutionDescriptor& conv, const TensorDescriptor& x,
                            const FilterDescriptor& w) {
  const int rank = x.shape.rank;
  Require(rank == conv.spatial + 2 && w.shape.rank == rank, CUDNN_STATUS_BAD_PARAM,
          "the tensor, filter and convolution differ in their number of dimensions");
  Require(x.shape.dims[1] == w.shape.dims[1] * conv.groups, CUDNN_STATUS_BAD_PARAM,
          "the input's channels are not the filter's channels times the group count");
  Require(w.shape.dims[0] % conv.groups == 0, CUDNN_STATUS_BAD_PARAM,
          "the filter's output channels are not a multiple of the group count");
  std::vector<int> dims = {static_cast<int>(x.shape.dims[0]), static_cast<int>(w.shape.dims[0])};
  for (int d = 0; d < conv.spatial; ++d) {
    const int64_t reach = (w.shape.dims[d + 2] - 1) * conv.dilation[d] + 1;
    const int64_t padded = x.shape.dims[d + 2] + 2 * int64_t{conv.pad[d]};
    Require(padded >= reach, CUDNN_STATUS_BAD_PARAM,
            "the dilated filter is larger than the padded input");
    dims.push_back(static_cast<int>(1 + (padded - reach) / conv.stride[d]));
  }
  return dims;
}

kernels::TensorShape WithDepth(const kernels::TensorShape& shape) {
  if (shape.rank != 4) return shape;
  kernels::TensorShape lifted = shape;
  lifted.rank = 5;
  for (int d = 4; d > 2; --d) {
    lifted.dims[d] = shape.dims[d - 1];
    lifted.strides[d] = shape.strides[d - 1];
  }
  lifted.dims[2] = 1;
  lifted.strides[2] = 0;  // never stepped along
  return lifted;
}

void CheckSpatial(int64_t spatial) {
  if (spatial != 2 && spatial != kernels::kConvolutionSpatial) {
    RefuseUnsupported(std::to_string(spatial) + "-D convolution", CUDNN_STATUS_NOT_SUPPORTED_SHAPE);
  }
}

void ToThreeSpatial(kernels::ConvolutionProblem& problem, int spatial) {
  if (spatial == kernels::kConvolutionSpatial) return;
  kernels::Convolution& conv = problem.conv;
  for (int d = 2; d > 0; --d) {
    conv.pad[d] = conv.pad[d - 1];
    conv.stride[d] = conv.stride[d - 1];
    conv.dilation[d] = conv.dilation[d - 1];
  }
  conv.pad[0] = 0;
  conv.stride[0] = 1;
  conv.dilation[0] = 1;
  problem.x = WithDepth(problem.x);
  problem.w = WithDepth(problem.w);
  problem.y = WithDepth(problem.y);
}

kernels::ConvolutionProblem ProblemOf(const TensorDescriptor& x, const FilterDescriptor& w,
                                      const ConvolutionDescriptor& conv,
                                      const TensorDescriptor& y) {
  const std::vector<int> dims = OutputDims(conv, x, w);
  bool fits = y.shape.rank == x.shape.rank;
  for (int d = 0; fits && d < y.shape.rank; ++d) fits = y.shape.dims[d] == dims[d];
  Require(fits, CUDNN_STATUS_BAD_PARAM,
          "the output tensor's dimensions are not the convolution's output dimensions");
  Require(x.type == w.type && x.type == y.type, CUDNN_STATUS_BAD_PARAM,
          "the tensors and the filter differ in data type");
  CheckSpatial(conv.spatial);
  CheckComputeType(x.type, conv.compute);
  kernels::ConvolutionProblem problem;
  problem.type = ElementTypeOf(x.type);
  problem.y_type = problem.type;
  for (int d = 0; d < conv.spatial; ++d) {
    problem.conv.pad[d] = conv.pad[d];
    problem.conv.stride[d] = conv.stride[d];
    problem.conv.dilation[d] = conv.dilation[d];
  }
  problem.conv.groups = conv.groups;
  problem.conv.flip = conv.mode == CUDNN_CONVOLUTION;
  problem.x = x.shape;
  problem.w = w.shape;
  problem.y = y.shape;
  ToThreeSpatial(problem, conv.spatial);
  return problem;
}

}  // namespace tally::libraries::cudnn
