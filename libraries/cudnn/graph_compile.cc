// Operation graphs compiled for Tally's kernels (graph_compile.h).
#include "libraries/cudnn/graph_compile.h"

#include <algorithm>
#include <string>

#include "libraries/cudnn/convolution.h"
#include "libraries/cudnn/status.h"

namespace tally::libraries::cudnn {
namespace {

constexpr size_t kWorkspaceAlignment = 256;

kernels::TensorShape ShapeOf(const BackendDescriptor& tensor) {
  const std::vector<int64_t> dims = tensor.Values<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS);
  const std::vector<int64_t> strides = tensor.Values<int64_t>(CUDNN_ATTR_TENSOR_STRIDES);
  kernels::TensorShape shape;
  shape.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), shape.dims);
  std::copy(strides.begin(), strides.end(), shape.strides);
  return shape;
}

bool SameShape(const kernels::TensorShape& a, const kernels::TensorShape& b) {
  return a.rank == b.rank && std::equal(a.dims, a.dims + a.rank, b.dims) &&
         std::equal(a.strides, a.strides + a.rank, b.strides);
}

// The graph's tensors by unique id, and its steps as they are read.
class Builder {
 public:
  CompiledGraph graph;

  // The index of a tensor operand, added at its first use.
  int Tensor(const BackendDescriptor& desc) {
    GraphTensor tensor;
    tensor.uid = desc.Value<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID);
    tensor.type = ElementTypeOf(desc.Value<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE));
    tensor.shape = ShapeOf(desc);
    tensor.is_virtual = desc.Value<bool>(CUDNN_ATTR_TENSOR_IS_VIRTUAL);
    tensor.by_value = desc.Value<bool>(CUDNN_ATTR_TENSOR_IS_BY_VALUE);
    for (size_t i = 0; i < graph.tensors.size(); ++i) {
      const GraphTensor& known = graph.tensors[i];
      if (known.uid != tensor.uid) continue;
      Require(known.type == tensor.type && SameShape(known.shape, tensor.shape) &&
                  known.is_virtual == tensor.is_virtual && known.by_value == tensor.by_value,
              CUDNN_STATUS_BAD_PARAM, "two tensors of the graph share a unique id");
      return static_cast<int>(i);
    }
    graph.tensors.push_back(tensor);
    return static_cast<int>(graph.tensors.size() - 1);
  }
};

// The convolution of an operation whose tensors are x (input), w (filter) and y (output) in
// forward naming.
GraphStep ConvolutionStep(Builder& builder, GraphStep::Kind kind, const BackendDescriptor& conv,
                          const BackendDescriptor& x, const BackendDescriptor& w,
                          const BackendDescriptor& y, double alpha, double beta) {
  GraphStep step;
  step.kind = kind;
  step.tensors[0] = builder.Tensor(x);
  step.tensors[1] = builder.Tensor(w);
  step.tensors[2] = builder.Tensor(y);
  const GraphTensor& in = builder.graph.tensors[step.tensors[0]];
  const GraphTensor& filter = builder.graph.tensors[step.tensors[1]];
  const GraphTensor& out = builder.graph.tensors[step.tensors[2]];
  // A forward convolution may write f16 or bf16 inputs into an f32 output (an intermediate).
  const bool f32_output = kind == GraphStep::Kind::kConvolutionForward &&
                          out.type == kernels::ElementType::kF32 &&
                          in.type != kernels::ElementType::kF64;
  if (in.type != filter.type || (in.type != out.type && !f32_output)) {
    RefuseUnsupported("a convolution whose tensors differ in data type",
                      CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  }
  if (in.by_value || filter.by_value || out.by_value) {
    RefuseUnsupported("a convolution of by-value tensors");
  }
  const int64_t spatial = conv.Value<int64_t>(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS);
  Require(in.shape.rank == spatial + 2 && filter.shape.rank == spatial + 2 &&
              out.shape.rank == spatial + 2,
          CUDNN_STATUS_BAD_PARAM,
          "the tensors' dimensions are not the convolution's spatial ones and N and C");
  CheckSpatial(spatial);
  CheckComputeType(x.Value<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE),
                   conv.Value<cudnnDataType_t>(CUDNN_ATTR_CONVOLUTION_COMP_TYPE));
  const std::vector<int64_t> pre = conv.Values<int64_t>(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS);
  const std::vector<int64_t> post = conv.Values<int64_t>(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS);
  const std::vector<int64_t> stride = conv.Values<int64_t>(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES);
  const std::vector<int64_t> dilation = conv.Values<int64_t>(CUDNN_ATTR_CONVOLUTION_DILATIONS);
  kernels::ConvolutionProblem& problem = step.convolution;
  problem.type = in.type;
  problem.y_type = out.type;
  problem.x = in.shape;
  problem.w = filter.shape;
  problem.y = out.shape;
  problem.conv.flip =
      conv.Value<cudnnConvolutionMode_t>(CUDNN_ATTR_CONVOLUTION_CONV_MODE) == CUDNN_CONVOLUTION;
  // Groups: the filter sees C / groups channels of the input.
  Require(filter.shape.dims[1] > 0 && in.shape.dims[1] % filter.shape.dims[1] == 0,
          CUDNN_STATUS_BAD_PARAM, "the filter's channels do not divide the input's");
  problem.conv.groups = in.shape.dims[1] / filter.shape.dims[1];
  Require(out.shape.dims[0] == in.shape.dims[0] && out.shape.dims[1] == filter.shape.dims[0] &&
              filter.shape.dims[0] % problem.conv.groups == 0,
          CUDNN_STATUS_BAD_PARAM, "the convolution's batch or channel counts disagree");
  for (int d = 0; d < spatial; ++d) {
    Require(pre[d] >= 0 && post[d] >= 0 && stride[d] > 0 && dilation[d] > 0,
            CUDNN_STATUS_BAD_PARAM, "a padding, stride or dilation is out of range");
    problem.conv.pad[d] = pre[d];
    problem.conv.stride[d] = stride[d];
    problem.conv.dilation[d] = dilation[d];
    const int64_t reach = (filter.shape.dims[d + 2] - 1) * dilation[d] + 1;
    const int64_t padded = in.shape.dims[d + 2] + pre[d] + post[d];
    Require(padded >= reach && out.shape.dims[d + 2] == 1 + (padded - reach) / stride[d],
            CUDNN_STATUS_BAD_PARAM, "the output's size is not the convolution's");
  }
  ToThreeSpatial(problem, static_cast<int>(spatial));
  step.blend = {alpha, beta};
  return step;
}

GraphStep ConvolutionOperation(Builder& builder, const BackendDescriptor& op) {
  switch (op.type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return ConvolutionStep(builder, GraphStep::Kind::kConvolutionForward,
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0));
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return ConvolutionStep(builder, GraphStep::Kind::kConvolutionBackwardData,
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 1),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 0));
    default:
      return ConvolutionStep(builder, GraphStep::Kind::kConvolutionBackwardFilter,
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW),
                             op.Child(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 1),
                             op.Real(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 0));
  }
}

kernels::PointwiseMode ModeOf(cudnnPointwiseMode_t mode) {
  using kernels::PointwiseMode;
  switch (mode) {
    case CUDNN_POINTWISE_ADD: return PointwiseMode::kAdd;
    case CUDNN_POINTWISE_SUB: return PointwiseMode::kSub;
    case CUDNN_POINTWISE_MUL: return PointwiseMode::kMul;
    case CUDNN_POINTWISE_DIV: return PointwiseMode::kDiv;
    case CUDNN_POINTWISE_MAX: return PointwiseMode::kMax;
    case CUDNN_POINTWISE_MIN: return PointwiseMode::kMin;
    case CUDNN_POINTWISE_IDENTITY: return PointwiseMode::kIdentity;
    case CUDNN_POINTWISE_NEG: return PointwiseMode::kNeg;
    case CUDNN_POINTWISE_ABS: return PointwiseMode::kAbs;
    case CUDNN_POINTWISE_EXP: return PointwiseMode::kExp;
    case CUDNN_POINTWISE_LOG: return PointwiseMode::kLog;
    case CUDNN_POINTWISE_SQRT: return PointwiseMode::kSqrt;
    case CUDNN_POINTWISE_RSQRT: return PointwiseMode::kRsqrt;
    case CUDNN_POINTWISE_RECIPROCAL: return PointwiseMode::kReciprocal;
    case CUDNN_POINTWISE_RELU_FWD: return PointwiseMode::kRelu;
    case CUDNN_POINTWISE_TANH_FWD: return PointwiseMode::kTanh;
    case CUDNN_POINTWISE_SIGMOID_FWD: return PointwiseMode::kSigmoid;
    case CUDNN_POINTWISE_ELU_FWD: return PointwiseMode::kElu;
    case CUDNN_POINTWISE_GELU_FWD: return PointwiseMode::kGelu;
    case CUDNN_POINTWISE_GELU_APPROX_TANH_FWD: return PointwiseMode::kGeluTanh;
    case CUDNN_POINTWISE_SWISH_FWD: return PointwiseMode::kSwish;
    case CUDNN_POINTWISE_SOFTPLUS_FWD: return PointwiseMode::kSoftplus;
    default:
      break;
  }
  RefuseUnsupported("pointwise mode " + std::to_string(mode) +
                    " (Tally's kernels run the arithmetic and forward activation modes)");
}

// Each operand's dimension is the output's or 1.
void RequireBroadcast(const GraphTensor& operand, const GraphTensor& out) {
  bool fits = operand.shape.rank == out.shape.rank;
  for (int d = 0; fits && d < out.shape.rank; ++d) {
    fits = operand.shape.dims[d] == out.shape.dims[d] || operand.shape.dims[d] == 1;
  }
  Require(fits || operand.by_value, CUDNN_STATUS_BAD_PARAM,
          "a pointwise operand does not broadcast to the output");
}

GraphStep PointwiseOperation(Builder& builder, const BackendDescriptor& op) {
  if (op.Has(CUDNN_ATTR_OPERATION_POINTWISE_TDESC) ||
      op.Has(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC) ||
      op.Has(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC)) {
    RefuseUnsupported("a ternary or backward pointwise operation");
  }
  const BackendDescriptor& desc = op.Child(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
  GraphStep step;
  kernels::PointwiseProblem& p = step.pointwise;
  p.mode = ModeOf(desc.Value<cudnnPointwiseMode_t>(CUDNN_ATTR_POINTWISE_MODE));
  p.in_double = desc.Value<cudnnDataType_t>(CUDNN_ATTR_POINTWISE_MATH_PREC) == CUDNN_DATA_DOUBLE;
  p.alpha1 = op.Real(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1);
  p.alpha2 = op.Real(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1);
  p.relu_lower = desc.Value<double>(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP);
  p.relu_upper = desc.Value<double>(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP);
  p.relu_slope = desc.Value<double>(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE);
  p.elu_alpha = desc.Value<double>(CUDNN_ATTR_POINTWISE_ELU_ALPHA);
  p.softplus_beta = desc.Value<double>(CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA);
  p.swish_beta = desc.Value<double>(CUDNN_ATTR_POINTWISE_SWISH_BETA);
  step.tensors[0] = builder.Tensor(op.Child(CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
  if (kernels::IsBinary(p.mode)) {
    Require(op.Has(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), CUDNN_STATUS_BAD_PARAM,
            "a binary pointwise operation without its second operand");
    step.tensors[1] = builder.Tensor(op.Child(CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
  }
  step.tensors[2] = builder.Tensor(op.Child(CUDNN_ATTR_OPERATION_POINTWISE_YDESC));
  const GraphTensor& out = builder.graph.tensors[step.tensors[2]];
  Require(!out.by_value, CUDNN_STATUS_BAD_PARAM, "a by-value tensor as an output");
  for (int operand : {step.tensors[0], step.tensors[1]}) {
    if (operand >= 0) RequireBroadcast(builder.graph.tensors[operand], out);
  }
  return step;
}

// The steps in an order in which every tensor a step writes is written before it is read.
std::vector<GraphStep> Ordered(std::vector<GraphStep> steps,
                               const std::vector<GraphTensor>& tensors) {
  std::vector<bool> ready(tensors.size());  // the application's inputs are
  for (size_t i = 0; i < tensors.size(); ++i) ready[i] = !tensors[i].is_virtual;
  for (const GraphStep& step : steps) ready[step.Output()] = false;
  std::vector<GraphStep> ordered;
  while (!steps.empty()) {
    auto runnable = std::find_if(steps.begin(), steps.end(), [&](const GraphStep& step) {
      const std::array<int, 2> inputs = step.Inputs();
      return std::all_of(inputs.begin(), inputs.end(), [&](int t) { return t < 0 || ready[t]; });
    });
    Require(runnable != steps.end(), CUDNN_STATUS_BAD_PARAM,
            "the graph's operations read a virtual tensor no operation writes, or form a cycle");
    ready[runnable->Output()] = true;
    ordered.push_back(*runnable);
    steps.erase(runnable);
  }
  return ordered;
}

// Virtual tensors get workspace, each at an aligned offset.
size_t LayOut(std::vector<GraphTensor>& tensors) {
  size_t bytes = 0;
  for (GraphTensor& tensor : tensors) {
    if (!tensor.is_virtual) continue;
    int64_t last = 0;
    for (int d = 0; d < tensor.shape.rank; ++d) {
      last += (tensor.shape.dims[d] - 1) * tensor.shape.strides[d];
    }
    tensor.workspace_offset = bytes;
    const size_t element = tensor.type == kernels::ElementType::kF64   ? 8
                           : tensor.type == kernels::ElementType::kF32 ? 4
                                                                       : 2;
    bytes += (static_cast<size_t>(last + 1) * element + kWorkspaceAlignment - 1) /
             kWorkspaceAlignment * kWorkspaceAlignment;
  }
  return bytes;
}

}  // namespace

CompiledGraph Compile(const BackendDescriptor& operation_graph) {
  Builder builder;
  std::vector<GraphStep> steps;
  for (const DescriptorSnapshot& op : operation_graph.Children(CUDNN_ATTR_OPERATIONGRAPH_OPS)) {
    switch (op->type) {
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
        steps.push_back(ConvolutionOperation(builder, *op));
        break;
      case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        steps.push_back(PointwiseOperation(builder, *op));
        break;
      default:
        RefuseUnsupported("operation descriptor type " + std::to_string(op->type));
    }
  }
  CompiledGraph graph = std::move(builder.graph);
  graph.steps = Ordered(std::move(steps), graph.tensors);
  graph.workspace_bytes = LayOut(graph.tensors);
  return graph;
}

}  // namespace tally::libraries::cudnn
