// A convolution as cuDNN's descriptors state it, checked and turned into the problem Tally's
// kernels take.
#pragma once

#include <vector>

#include "libraries/cudnn/descriptors.h"

namespace tally::libraries::cudnn {

// The data and compute types cuDNN's convolutions take together: double with double; float with
// float; half with float or half (computed in float here, which is at least as exact); bfloat16
// with float. NOT_SUPPORTED_DATA_TYPE for the others.
void CheckComputeType(cudnnDataType_t data, cudnnDataType_t compute);

// The output dimensions of convolving x with w (N, K, then each spatial one), as
// cudnnGetConvolutionNdForwardOutputDim says: BAD_PARAM when the ranks or channels disagree or
// the filter does not fit.
std::vector<int> OutputDims(const ConvolutionDescriptor& conv, const TensorDescriptor& x,
                            const FilterDescriptor& w);

// A tensor's shape as Tally's convolution kernels take it: 5-D, a 4-D one (N, C, H, W) with a
// depth of 1 inserted before H.
kernels::TensorShape WithDepth(const kernels::TensorShape& shape);

// Tally's kernels convolve in 2 or 3 spatial dimensions (NOT_SUPPORTED_SHAPE for others).
void CheckSpatial(int64_t spatial);

// Turns a problem of `spatial` (2 or 3) dimensions, its tensors of spatial + 2 dimensions, its
// padding, stride and dilation in the first `spatial` entries, into the 3-D one Tally's kernels
// take: a 2-D convolution is one of depth 1, unpadded, of stride and dilation 1.
void ToThreeSpatial(kernels::ConvolutionProblem& problem, int spatial);

// The problem of a 2-D or 3-D convolution of x with w into y (each of the three directions names
// its tensors so): the types agree with each other and with the compute type, y has the output's
// dimensions. NOT_SUPPORTED for what Tally's kernels lack (other ranks, other types).
kernels::ConvolutionProblem ProblemOf(const TensorDescriptor& x, const FilterDescriptor& w,
                                      const ConvolutionDescriptor& conv,
                                      const TensorDescriptor& y);

}  // namespace tally::libraries::cudnn
