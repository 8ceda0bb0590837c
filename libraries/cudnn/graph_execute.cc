// cudnnBackendExecute: a plan's compiled graph run on Tally's kernels with the variant pack's
// memory (graph_backend.h).
#include <string>

#include "libraries/cudnn/graph_backend.h"
#include "libraries/cudnn/graph_compile.h"

namespace tally::libraries::cudnn {
namespace {

// Where each of the graph's tensors is: the variant pack's pointer for the application's (by
// unique id), the workspace for virtual ones.
std::vector<void*> Addresses(const CompiledGraph& graph, const BackendDescriptor& pack) {
  const std::vector<int64_t> ids = pack.Values<int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const std::vector<void*> pointers = pack.Values<void*>(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  auto* workspace =
      static_cast<char*>(pack.ValueOr<void*>(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, nullptr));
  if (graph.workspace_bytes > 0) RequireNotNull(workspace, "the variant pack's workspace");
  std::vector<void*> addresses;
  for (const GraphTensor& tensor : graph.tensors) {
    if (tensor.is_virtual) {
      addresses.push_back(workspace + tensor.workspace_offset);
      continue;
    }
    size_t i = 0;
    while (i < ids.size() && ids[i] != tensor.uid) ++i;
    Require(i < ids.size(), CUDNN_STATUS_BAD_PARAM,
            ("the variant pack lacks tensor " + std::to_string(tensor.uid)).c_str());
    RequireNotNull(pointers[i], "a variant pack data pointer");
    addresses.push_back(pointers[i]);
  }
  return addresses;
}

kernels::PointwiseOperand OperandOf(const GraphTensor& tensor, void* address) {
  kernels::PointwiseOperand operand;
  operand.type = tensor.type;
  operand.shape = tensor.shape;
  operand.data = address;
  operand.by_value = tensor.by_value;
  // A by-value tensor's pointer is to its value in host memory, read now.
  if (tensor.by_value) operand.value = ReadHostElement(address, tensor.type);
  return operand;
}

// A step's kernel. Its tensors are x, w, y in forward naming for convolutions (dx, w, dy
// backward data; x, dw, dy backward filter), x, b, y for pointwise operations.
void Launch(const GraphStep& step, const std::vector<GraphTensor>& tensors,
            const std::vector<void*>& at, cudaStream_t stream) {
  const int x = step.tensors[0], w = step.tensors[1], y = step.tensors[2];
  switch (step.kind) {
    case GraphStep::Kind::kConvolutionForward: {
      kernels::ForwardEpilogue epilogue;
      epilogue.blend = step.blend;
      epilogue.z = at[y];  // y = alpha conv + beta y
      epilogue.z_shape = step.convolution.y;
      CheckLaunch(kernels::LaunchConvolutionForward(step.convolution, at[x], at[w], at[y],
                                                    epilogue, stream));
      return;
    }
    case GraphStep::Kind::kConvolutionBackwardData:
      CheckLaunch(kernels::LaunchConvolutionBackwardData(step.convolution, at[w], at[y], at[x],
                                                         step.blend, stream));
      return;
    case GraphStep::Kind::kConvolutionBackwardFilter:
      CheckLaunch(kernels::LaunchConvolutionBackwardFilter(step.convolution, at[x], at[y], at[w],
                                                           step.blend, stream));
      return;
    case GraphStep::Kind::kPointwise: {
      kernels::PointwiseProblem problem = step.pointwise;
      problem.x = OperandOf(tensors[x], at[x]);
      if (w >= 0) problem.b = OperandOf(tensors[w], at[w]);
      problem.y_type = tensors[y].type;
      problem.y_shape = tensors[y].shape;
      problem.y = at[y];
      CheckLaunch(kernels::LaunchPointwise(problem, stream));
      return;
    }
  }
}

}  // namespace

void Execute(cudaStream_t stream, const BackendDescriptor& plan, const BackendDescriptor& pack) {
  Require(plan.type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
              pack.type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
          CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
          "the plan or the variant pack is a descriptor of another kind");
  Require(plan.finalized && pack.finalized, CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
          "the plan or the variant pack is not finalized");
  const CompiledGraph& graph = *plan.graph;
  const std::vector<void*> at = Addresses(graph, pack);
  for (const GraphStep& step : graph.steps) Launch(step, graph.tensors, at, stream);
}

}  // namespace tally::libraries::cudnn
