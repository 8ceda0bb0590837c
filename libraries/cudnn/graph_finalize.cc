// cudnnBackendFinalize: each kind checked, and what cuDNN derives derived (graph_backend.h).
// Tally has one engine (its own kernels, global index 0): the heuristics offer it for a graph it
// can run and nothing for another, saying why once on stderr.
#include <string>

#include "libraries/cudnn/descriptors.h"
#include "libraries/cudnn/graph_backend.h"
#include "libraries/cudnn/graph_compile.h"
#include "libraries/cudnn/graph_schema.h"

namespace tally::libraries::cudnn {
namespace {

void RequireKind(const BackendDescriptor& desc, cudnnBackendDescriptorType_t type,
                 const char* what) {
  Require(desc.type == type, CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
          (std::string(what) + " is a descriptor of another kind").c_str());
}

void FinalizeTensor(const BackendDescriptor& desc) {
  const std::vector<int64_t> dims = desc.Values<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS);
  const std::vector<int64_t> strides = desc.Values<int64_t>(CUDNN_ATTR_TENSOR_STRIDES);
  Require(!dims.empty() && dims.size() <= CUDNN_DIM_MAX && strides.size() == dims.size(),
          CUDNN_STATUS_BAD_PARAM, "the dimensions and strides differ in number or are too many");
  for (size_t d = 0; d < dims.size(); ++d) {
    Require(dims[d] > 0 && strides[d] > 0, CUDNN_STATUS_BAD_PARAM,
            "a dimension or stride is not positive");
  }
  Require(desc.Value<int64_t>(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT) > 0, CUDNN_STATUS_BAD_PARAM,
          "the byte alignment is not positive");
  if (desc.Value<int64_t>(CUDNN_ATTR_TENSOR_VECTOR_COUNT) != 1) {
    RefuseUnsupported("vectorized tensors", CUDNN_STATUS_NOT_SUPPORTED_LAYOUT);
  }
  if (desc.Value<cudnnBackendTensorReordering_t>(CUDNN_ATTR_TENSOR_REORDERING_MODE) !=
      CUDNN_TENSOR_REORDERING_NONE) {
    RefuseUnsupported("reordered tensors", CUDNN_STATUS_NOT_SUPPORTED_LAYOUT);
  }
}

void FinalizeConvolution(const BackendDescriptor& desc) {
  const int64_t spatial = desc.Value<int64_t>(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS);
  Require(spatial >= 1 && spatial <= CUDNN_DIM_MAX - 2, CUDNN_STATUS_BAD_PARAM,
          "the number of spatial dimensions is out of range");
  for (auto name : {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                    CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS}) {
    Require(static_cast<int64_t>(desc.Values<int64_t>(name).size()) == spatial,
            CUDNN_STATUS_BAD_PARAM, "a convolution array is not one per spatial dimension");
  }
}

void FinalizeOperationGraph(BackendDescriptor& desc) {
  FindHandle(desc.Value<cudnnHandle_t>(CUDNN_ATTR_OPERATIONGRAPH_HANDLE));
  Require(!desc.Children(CUDNN_ATTR_OPERATIONGRAPH_OPS).empty(), CUDNN_STATUS_BAD_PARAM,
          "the graph has no operations");
  if (desc.Value<bool>(CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED)) {
    RefuseUnsupported("graphs with dynamic shapes");
  }
  desc.Derive<int64_t>(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, {1});
}

void FinalizeEngine(BackendDescriptor& desc) {
  const BackendDescriptor& graph = desc.Child(CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
  RequireKind(graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the engine's operation graph");
  Require(desc.Value<int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX) == 0, CUDNN_STATUS_BAD_PARAM,
          "the engine's global index is not below the graph's engine count (1)");
  desc.graph = std::make_shared<const CompiledGraph>(Compile(graph));
  desc.DeriveDescriptors(CUDNN_ATTR_ENGINE_KNOB_INFO, {});
  desc.DeriveDescriptors(CUDNN_ATTR_ENGINE_LAYOUT_INFO, {});
  desc.Derive<cudnnBackendNumericalNote_t>(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                           CUDNN_TYPE_NUMERICAL_NOTE, {});
  desc.Derive<cudnnBackendBehaviorNote_t>(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                          CUDNN_TYPE_BEHAVIOR_NOTE, {});
}

void FinalizeEngineConfig(BackendDescriptor& desc) {
  const BackendDescriptor& engine = desc.Child(CUDNN_ATTR_ENGINECFG_ENGINE);
  RequireKind(engine, CUDNN_BACKEND_ENGINE_DESCRIPTOR, "the configuration's engine");
  if (desc.Has(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES) &&
      !desc.Children(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES).empty()) {
    RefuseUnsupported("knob choices (Tally's engine has no knobs)");
  }
  desc.graph = engine.graph;
  desc.Derive<int64_t>(CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                       {static_cast<int64_t>(desc.graph->workspace_bytes)});
}

// The heuristics' one configuration: Tally's engine, for a graph it can run.
void FinalizeHeuristics(BackendDescriptor& desc) {
  const DescriptorSnapshot& graph = desc.Children(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH).at(0);
  RequireKind(*graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the heuristics' operation graph");
  BackendDescriptor engine;
  engine.type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
  engine.DeriveDescriptors(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
  engine.Derive<int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, {0});
  try {
    Finalize(engine);
  } catch (const Refusal& refusal) {
    if (refusal.status / 1000 != CUDNN_STATUS_NOT_SUPPORTED / 1000) throw;
    Record("cudnnBackendFinalize (engine heuristics)", refusal);  // says why there is none
    desc.DeriveDescriptors(CUDNN_ATTR_ENGINEHEUR_RESULTS, {});
    return;
  }
  BackendDescriptor config;
  config.type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
  config.DeriveDescriptors(CUDNN_ATTR_ENGINECFG_ENGINE,
                           {std::make_shared<const BackendDescriptor>(std::move(engine))});
  Finalize(config);
  desc.DeriveDescriptors(CUDNN_ATTR_ENGINEHEUR_RESULTS,
                         {std::make_shared<const BackendDescriptor>(std::move(config))});
}

void FinalizePlan(BackendDescriptor& desc) {
  FindHandle(desc.Value<cudnnHandle_t>(CUDNN_ATTR_EXECUTION_PLAN_HANDLE));
  const BackendDescriptor& config = desc.Child(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  RequireKind(config, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "the plan's engine configuration");
  desc.graph = config.graph;
  desc.Derive<int64_t>(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                       {static_cast<int64_t>(desc.graph->workspace_bytes)});
  desc.Derive<int64_t>(CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS, CUDNN_TYPE_INT64, {});
}

void FinalizeVariantPack(const BackendDescriptor& desc) {
  Require(desc.Values<int64_t>(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS).size() ==
              desc.Values<void*>(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS).size(),
          CUDNN_STATUS_BAD_PARAM, "the variant pack has not one data pointer per unique id");
}

}  // namespace

void Finalize(BackendDescriptor& desc) {
  Require(!desc.finalized, CUDNN_STATUS_BAD_PARAM, "the descriptor is already finalized");
  const DescriptorRule* kind = RuleFor(desc.type);
  for (const AttributeRule& rule : kind->attributes) {
    if (rule.need == Need::kRequired && !desc.Has(rule.name)) {
      Refuse(CUDNN_STATUS_BAD_PARAM, std::string(kind->name) + " lacks its required attribute " +
                                         std::to_string(rule.name));
    }
  }
  switch (desc.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      FinalizeTensor(desc);
      break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      FinalizeConvolution(desc);
      break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      FinalizeOperationGraph(desc);
      break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      FinalizeHeuristics(desc);
      break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      FinalizeEngine(desc);
      break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      FinalizeEngineConfig(desc);
      break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      FinalizePlan(desc);
      break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      FinalizeVariantPack(desc);
      break;
    default:
      break;  // operations are checked when their graph is compiled
  }
  desc.finalized = true;
}

}  // namespace tally::libraries::cudnn
