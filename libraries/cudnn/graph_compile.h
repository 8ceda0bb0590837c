// An operation graph of cuDNN's backend API turned into what Tally's kernels run: its tensors
// (the application's, found by unique id in the variant pack; virtual ones laid out in the
// workspace; by-value ones read from host memory at execution) and its operations in an order
// in which each one's inputs are ready. What the kernels cannot run is refused as NOT_SUPPORTED,
// naming it; an inconsistent graph as BAD_PARAM.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "libraries/cudnn/graph_descriptor.h"
#include "libraries/kernels/dnn_kernels.h"

namespace tally::libraries::cudnn {

struct GraphTensor {
  int64_t uid = 0;
  kernels::ElementType type = kernels::ElementType::kF32;
  kernels::TensorShape shape;
  bool is_virtual = false;
  bool by_value = false;
  size_t workspace_offset = 0;  // virtual tensors
};

struct GraphStep {
  enum class Kind : uint8_t { kConvolutionForward, kConvolutionBackwardData,
                              kConvolutionBackwardFilter, kPointwise };
  Kind kind = Kind::kPointwise;
  // Convolutions: the problem in forward naming (x in, w filter, y out) and the blend.
  kernels::ConvolutionProblem convolution;
  kernels::Blend blend;
  // Pointwise: the problem without its data (filled in at execution).
  kernels::PointwiseProblem pointwise;
  // Indexes into CompiledGraph::tensors: a convolution's x, w, y (dx, w, dy for backward data;
  // x, dw, dy for backward filter); a pointwise operation's x, b (or -1), y.
  int tensors[3] = {-1, -1, -1};

  // The tensors the step reads (-1: none) and the one it writes.
  std::array<int, 2> Inputs() const {
    switch (kind) {
      case Kind::kConvolutionBackwardData:
        return {tensors[1], tensors[2]};
      case Kind::kConvolutionBackwardFilter:
        return {tensors[0], tensors[2]};
      default:
        return {tensors[0], tensors[1]};
    }
  }
  int Output() const {
    switch (kind) {
      case Kind::kConvolutionBackwardData:
        return tensors[0];
      case Kind::kConvolutionBackwardFilter:
        return tensors[1];
      default:
        return tensors[2];
    }
  }
};

struct CompiledGraph {
  std::vector<GraphTensor> tensors;
  std::vector<GraphStep> steps;
  size_t workspace_bytes = 0;
};

CompiledGraph Compile(const BackendDescriptor& operation_graph);

}  // namespace tally::libraries::cudnn
