// CUDA graphs, runtime and driver API (CUDA Runtime API, "Graph Management"; CUDA Driver API,
// "Graph Management"): the graph model and its replay are client/graph.h's; this file checks each
// call's arguments and converts parameters. CUgraph, CUgraphNode and CUgraphExec are the
// runtime's handle types, and the driver's parameter structures share the runtime's layouts
// where both have one (host nodes, memsets, update results, instantiation parameters).
// What Tally's graphs do not hold (conditional, external semaphore and batch memory operation
// nodes, device launches, node enabling, non-default edges, user objects) stays with the
// unsupported stubs (client/README.md).
#include "client/graph.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "client/capture.h"
#include "client/entry.h"
#include "client/graph_memory.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "client/launch.h"
#include "client/status.h"
#include "client/streams.h"
#include "common/status.h"

namespace tally::client {
namespace {

absl::Status CheckFlagsZero(unsigned long long flags) {
  if (flags != 0) return CudaError(cudaErrorInvalidValue, "flags must be 0");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Node*>> NodesOf(const Graph& graph, const cudaGraphNode_t* handles,
                                           size_t count) {
  if (count > 0 && handles == nullptr) return CudaError(cudaErrorInvalidValue, "null node list");
  std::vector<Node*> nodes;
  for (size_t i = 0; i < count; ++i) {
    TALLY_ASSIGN_OR_RETURN(Node * node, FindNodeOf(handles[i], graph));
    nodes.push_back(node);
  }
  return nodes;
}

// cudaGraphAdd*Node: the node after `dependencies`.
absl::Status AddNode(cudaGraphNode_t* out, cudaGraph_t graph_handle,
                     const cudaGraphNode_t* dependencies, size_t count, NodeWork work) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(Graph * graph, FindGraph(graph_handle));
  TALLY_ASSIGN_OR_RETURN(const std::vector<Node*> after, NodesOf(*graph, dependencies, count));
  TALLY_ASSIGN_OR_RETURN(Node * node, graph->Add(std::move(work), after));
  *out = ToHandle(node);
  return absl::OkStatus();
}

// The work of a node of the kind asked for; cudaErrorInvalidValue for another kind.
template <typename Work>
absl::StatusOr<Work*> WorkOf(Node* node) {
  auto* work = std::get_if<Work>(&node->work);
  if (work == nullptr) return CudaError(cudaErrorInvalidValue, "a node of another type");
  return work;
}

template <typename Work>
absl::StatusOr<Work*> NodeWorkOf(cudaGraphNode_t handle) {
  TALLY_ASSIGN_OR_RETURN(Node * node, FindNode(handle));
  return WorkOf<Work>(node);
}

template <typename Work>
absl::StatusOr<Work*> ExecWorkOf(cudaGraphExec_t exec_handle, cudaGraphNode_t handle) {
  TALLY_ASSIGN_OR_RETURN(GraphExec * exec, FindExec(exec_handle));
  TALLY_ASSIGN_OR_RETURN(Node * node, exec->Instance(handle));
  return WorkOf<Work>(node);
}

// Sets a node's work of one kind to `work` (a node of another kind: cudaErrorInvalidValue).
template <typename Work>
absl::Status SetNodeWork(cudaGraphNode_t handle, absl::StatusOr<Work> work) {
  TALLY_ASSIGN_OR_RETURN(Work * current, NodeWorkOf<Work>(handle));
  TALLY_RETURN_IF_ERROR(work.status());
  *current = *std::move(work);
  return absl::OkStatus();
}

template <typename Work>
absl::Status SetExecWork(cudaGraphExec_t exec, cudaGraphNode_t handle, absl::StatusOr<Work> work) {
  TALLY_ASSIGN_OR_RETURN(Work * current, ExecWorkOf<Work>(exec, handle));
  TALLY_RETURN_IF_ERROR(work.status());
  *current = *std::move(work);
  return absl::OkStatus();
}

// A list output as CUDA's graph queries fill it: with a null array only the count; otherwise
// up to *count entries, NULL past the end, and *count the number written.
template <typename Handle, typename Item>
absl::Status FillList(std::span<Item* const> items, Handle* out, cudaGraphEdgeData* edges,
                      size_t* count) {
  TALLY_RETURN_IF_ERROR(CheckOut(count));
  if (out == nullptr) {
    *count = items.size();
    return absl::OkStatus();
  }
  for (size_t i = 0; i < *count; ++i) {
    out[i] = i < items.size() ? reinterpret_cast<Handle>(items[i]) : nullptr;
    if (edges != nullptr) edges[i] = cudaGraphEdgeData{};
  }
  *count = std::min(*count, items.size());
  return absl::OkStatus();
}

absl::Status ChangeEdges(cudaGraph_t graph_handle, const cudaGraphNode_t* from,
                         const cudaGraphNode_t* to, const cudaGraphEdgeData* edges, size_t count,
                         bool add) {
  TALLY_RETURN_IF_ERROR(CheckDefaultEdges(edges, count));
  TALLY_ASSIGN_OR_RETURN(Graph * graph, FindGraph(graph_handle));
  TALLY_ASSIGN_OR_RETURN(const std::vector<Node*> sources, NodesOf(*graph, from, count));
  TALLY_ASSIGN_OR_RETURN(const std::vector<Node*> targets, NodesOf(*graph, to, count));
  for (size_t i = 0; i < count; ++i) {
    TALLY_RETURN_IF_ERROR(add ? graph->Connect(sources[i], targets[i])
                              : graph->Disconnect(sources[i], targets[i]));
  }
  return absl::OkStatus();
}

absl::Status GetEdges(cudaGraph_t graph_handle, cudaGraphNode_t* from, cudaGraphNode_t* to,
                      cudaGraphEdgeData* edges, size_t* count) {
  TALLY_RETURN_IF_ERROR(CheckOut(count));
  TALLY_ASSIGN_OR_RETURN(Graph * graph, FindGraph(graph_handle));
  std::vector<Node*> sources;
  std::vector<Node*> targets;
  for (const auto& node : graph->nodes) {
    for (Node* dependency : node->dependencies) {
      sources.push_back(dependency);
      targets.push_back(node.get());
    }
  }
  if ((from == nullptr) != (to == nullptr)) {
    return CudaError(cudaErrorInvalidValue, "from and to must both be given or both be NULL");
  }
  size_t wanted = *count;
  TALLY_RETURN_IF_ERROR((FillList<cudaGraphNode_t, Node>(sources, from, edges, &wanted)));
  return FillList<cudaGraphNode_t, Node>(targets, to, nullptr, count);
}

absl::StatusOr<KernelWork> KernelWorkFor(const Kernel& kernel, const void* function, dim3 grid,
                                         dim3 block, unsigned int shared_bytes, void** params,
                                         void** extra) {
  KernelWork work;
  work.launch.kernel = &kernel;
  work.launch.grid = {grid.x, grid.y, grid.z};
  work.launch.block = {block.x, block.y, block.z};
  work.launch.shared_bytes = shared_bytes;
  work.function = function;
  std::vector<std::byte> buffer;
  TALLY_ASSIGN_OR_RETURN(const std::span<const std::byte> packed,
                         DriverParams(kernel, params, extra, buffer));
  work.launch.params.assign(packed.begin(), packed.end());
  return work;
}

absl::StatusOr<KernelWork> KernelWorkOf(const cudaKernelNodeParams* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null kernel node parameters");
  TALLY_ASSIGN_OR_RETURN(Kernel * kernel, KernelRegistry::Get().Resolve(params->func));
  return KernelWorkFor(*kernel, params->func, params->gridDim, params->blockDim,
                       params->sharedMemBytes, params->kernelParams, params->extra);
}

absl::Status GetKernelParams(cudaGraphNode_t node, cudaKernelNodeParams* out) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(KernelWork * work, NodeWorkOf<KernelWork>(node));
  const PackedLaunch& launch = work->launch;
  work->argument_pointers.clear();
  for (const ipc::ParamSlot& slot : launch.kernel->params) {
    work->argument_pointers.push_back(work->launch.params.data() + slot.offset);
  }
  *out = {.func = const_cast<void*>(work->function),
          .gridDim = dim3(launch.grid.x, launch.grid.y, launch.grid.z),
          .blockDim = dim3(launch.block.x, launch.block.y, launch.block.z),
          .sharedMemBytes = static_cast<unsigned int>(launch.shared_bytes),
          .kernelParams = work->argument_pointers.data(),
          .extra = nullptr};
  return absl::OkStatus();
}

absl::StatusOr<CopyWork> CopyWorkOf(const cudaMemcpy3DParms* parms) {
  if (parms == nullptr) return CudaError(cudaErrorInvalidValue, "null cudaMemcpy3DParms");
  if (parms->srcArray != nullptr || parms->dstArray != nullptr) {
    return CudaError(cudaErrorNotSupported, "CUDA arrays are not supported");
  }
  return CopyWork{.parms = *parms};
}

CopyWork CopyWork1D(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  cudaMemcpy3DParms parms{};
  parms.dstPtr = {.ptr = dst, .pitch = count, .xsize = count, .ysize = 1};
  parms.srcPtr = {.ptr = const_cast<void*>(src), .pitch = count, .xsize = count, .ysize = 1};
  parms.extent = {.width = count, .height = 1, .depth = 1};
  parms.kind = kind;
  return CopyWork{.parms = parms};
}

absl::StatusOr<MemsetWork> MemsetWorkOf(const cudaMemsetParams* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null cudaMemsetParams");
  if (params->elementSize != 1 && params->elementSize != 2 && params->elementSize != 4) {
    return CudaError(cudaErrorInvalidValue, "memset element size must be 1, 2 or 4");
  }
  if (params->height > 1 && params->pitch < params->width * params->elementSize) {
    return CudaError(cudaErrorInvalidValue, "memset pitch below the row's width");
  }
  return MemsetWork{.params = *params};
}

absl::StatusOr<HostWork> HostWorkOf(const cudaHostNodeParams* params) {
  if (params == nullptr || params->fn == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null host node function");
  }
  return HostWork{.function = params->fn, .data = params->userData};
}

absl::Status CheckEvent(cudaEvent_t event) {
  if (event == nullptr) return CudaError(cudaErrorInvalidResourceHandle, "null event");
  return absl::OkStatus();
}

absl::Status AddChildGraph(cudaGraphNode_t* out, cudaGraph_t graph,
                           const cudaGraphNode_t* dependencies, size_t count, cudaGraph_t child) {
  TALLY_ASSIGN_OR_RETURN(const Graph* embedded, FindGraph(child));
  if (ToHandle(const_cast<Graph*>(embedded)) == graph) {
    return CudaError(cudaErrorInvalidValue, "a graph cannot contain itself");
  }
  return AddNode(out, graph, dependencies, count, ChildGraphWork(embedded->Clone()));
}

// Memory is reserved at once (graph_memory.h); `params->dptr` receives its address.
absl::Status AddMemAlloc(cudaGraphNode_t* out, cudaGraph_t graph,
                         const cudaGraphNode_t* dependencies, size_t count,
                         cudaMemAllocNodeParams* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null cudaMemAllocNodeParams");
  const cudaMemPoolProps& props = params->poolProps;
  if (props.allocType != cudaMemAllocationTypePinned ||
      props.location.type != cudaMemLocationTypeDevice ||
      props.handleTypes != cudaMemHandleTypeNone) {
    return CudaError(cudaErrorInvalidValue, "graph allocations are pinned device memory");
  }
  TALLY_RETURN_IF_ERROR(CheckDevice(props.location.id));
  TALLY_ASSIGN_OR_RETURN(auto allocation, GraphAllocation::Reserve(params->bytesize));
  MemAllocWork work{.allocation = allocation, .params = *params};
  work.params.accessDescs = nullptr;
  work.params.accessDescCount = 0;
  work.params.dptr = allocation->pointer();
  TALLY_RETURN_IF_ERROR(AddNode(out, graph, dependencies, count, std::move(work)));
  params->dptr = allocation->pointer();
  return absl::OkStatus();
}

absl::Status AddMemFree(cudaGraphNode_t* out, cudaGraph_t graph,
                        const cudaGraphNode_t* dependencies, size_t count, void* pointer) {
  if (!GraphAllocation::Owns(pointer)) {
    return CudaError(cudaErrorInvalidValue, "not the address of a graph allocation");
  }
  return AddNode(out, graph, dependencies, count, MemFreeWork{.pointer = pointer});
}

absl::Status CreateGraph(cudaGraph_t* graph, unsigned int flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(graph));
  TALLY_RETURN_IF_ERROR(CheckFlagsZero(flags));
  *graph = ToHandle(new Graph);
  return absl::OkStatus();
}

absl::Status GetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  TALLY_ASSIGN_OR_RETURN(const Graph* found, FindGraph(graph));
  std::vector<Node*> all;
  for (const auto& node : found->nodes) all.push_back(node.get());
  return FillList<cudaGraphNode_t, Node>(all, nodes, nullptr, count);
}

absl::Status GetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  TALLY_RETURN_IF_ERROR(CheckOut(type));
  TALLY_ASSIGN_OR_RETURN(const Node* found, FindNode(node));
  *type = TypeOf(found->work);
  return absl::OkStatus();
}

absl::Status DestroyNode(cudaGraphNode_t node) {
  TALLY_ASSIGN_OR_RETURN(Node * found, FindNode(node));
  found->graph->Remove(found);
  return absl::OkStatus();
}

absl::Status GetExecFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(flags));
  TALLY_ASSIGN_OR_RETURN(const GraphExec* found, FindExec(exec));
  *flags = found->flags();
  return absl::OkStatus();
}

// An event record or wait node (Work: EventRecordWork or EventWaitWork).
template <typename Work>
absl::Status AddEventNode(cudaGraphNode_t* out, cudaGraph_t graph,
                          const cudaGraphNode_t* dependencies, size_t count, cudaEvent_t event) {
  TALLY_RETURN_IF_ERROR(CheckEvent(event));
  return AddNode(out, graph, dependencies, count, Work{.event = event});
}

absl::Status DestroyGraph(cudaGraph_t handle) {
  TALLY_ASSIGN_OR_RETURN(Graph * graph, FindGraph(handle));
  if (graph->owner != nullptr) {
    return CudaError(cudaErrorInvalidValue, "a child graph belongs to its node");
  }
  delete graph;
  return absl::OkStatus();
}

absl::Status CloneGraph(cudaGraph_t* out, cudaGraph_t original) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(const Graph* graph, FindGraph(original));
  *out = ToHandle(graph->Clone().release());
  return absl::OkStatus();
}

absl::Status FindInClone(cudaGraphNode_t* out, cudaGraphNode_t original, cudaGraph_t clone) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(const Graph* graph, FindGraph(clone));
  for (const auto& node : graph->nodes) {
    if (node->clone_of == static_cast<const void*>(original) && original != nullptr) {
      *out = ToHandle(node.get());
      return absl::OkStatus();
    }
  }
  return CudaError(cudaErrorInvalidValue, "the node has no copy in that graph");
}

absl::Status Instantiate(cudaGraphExec_t* out, cudaGraph_t graph_handle, unsigned long long flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_ASSIGN_OR_RETURN(const Graph* graph, FindGraph(graph_handle));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<GraphExec> exec, GraphExec::Instantiate(*graph, flags));
  *out = ToHandle(exec.release());
  return absl::OkStatus();
}

absl::Status InstantiateWithParams(cudaGraphExec_t* out, cudaGraph_t graph,
                                   cudaGraphInstantiateParams* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null instantiate parameters");
  params->errNode_out = nullptr;
  const absl::Status status = Instantiate(out, graph, params->flags);
  params->result_out = status.ok() ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  return status;
}

absl::Status ExecUpdate(cudaGraphExec_t exec_handle, cudaGraph_t graph_handle,
                        cudaGraphExecUpdateResultInfo* info) {
  TALLY_RETURN_IF_ERROR(CheckOut(info));
  TALLY_ASSIGN_OR_RETURN(GraphExec * exec, FindExec(exec_handle));
  TALLY_ASSIGN_OR_RETURN(const Graph* graph, FindGraph(graph_handle));
  return exec->Update(*graph, *info);
}

absl::Status Launch(cudaGraphExec_t exec_handle, cudaStream_t stream) {
  TALLY_ASSIGN_OR_RETURN(GraphExec * exec, FindExec(exec_handle));
  return exec->Launch(stream);
}

// Tally keeps nothing on the device for a graph before it runs: uploading is checking.
absl::Status Upload(cudaGraphExec_t exec, cudaStream_t stream) {
  TALLY_RETURN_IF_ERROR(FindExec(exec).status());
  return Streams::Get().Find(stream).status();
}

const char* TypeName(cudaGraphNodeType type) {
  switch (type) {
    case cudaGraphNodeTypeKernel:
      return "kernel";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "child graph";
    case cudaGraphNodeTypeEmpty:
      return "empty";
    case cudaGraphNodeTypeWaitEvent:
      return "event wait";
    case cudaGraphNodeTypeEventRecord:
      return "event record";
    case cudaGraphNodeTypeMemAlloc:
      return "mem alloc";
    case cudaGraphNodeTypeMemFree:
      return "mem free";
    default:
      return "node";
  }
}

// One graph's nodes and edges in DOT; a child graph is a cluster of its own.
void WriteDot(const Graph& graph, const std::string& prefix, std::ostream& out) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = *graph.nodes[i];
    std::string label = TypeName(TypeOf(node.work));
    if (const auto* kernel = std::get_if<KernelWork>(&node.work)) {
      label += "\\n" + kernel->launch.kernel->name;
    }
    out << "  \"" << prefix << i << "\" [shape=box label=\"" << label << "\"];\n";
    if (const auto* child = std::get_if<ChildGraphWork>(&node.work)) {
      out << "  subgraph \"cluster_" << prefix << i << "\" {\n";
      WriteDot(*child->graph, prefix + std::to_string(i) + "_", out);
      out << "  }\n";
    }
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const Node* dependency : graph.nodes[i]->dependencies) {
      size_t from = 0;
      while (graph.nodes[from].get() != dependency) ++from;
      out << "  \"" << prefix << from << "\" -> \"" << prefix << i << "\";\n";
    }
  }
}

// cudaGraphDebugDotPrint: the graph's nodes (kernels by name) and edges; the verbosity flags
// are accepted and add nothing.
absl::Status DotPrint(cudaGraph_t graph_handle, const char* path) {
  if (path == nullptr) return CudaError(cudaErrorInvalidValue, "null path");
  TALLY_ASSIGN_OR_RETURN(const Graph* graph, FindGraph(graph_handle));
  std::ofstream out(path);
  out << "digraph tally_graph {\n";
  WriteDot(*graph, "n", out);
  out << "}\n";
  out.close();
  if (!out) return CudaError(cudaErrorOperatingSystem, std::string("cannot write ") + path);
  return absl::OkStatus();
}

static_assert(sizeof(cudaMemAllocNodeParamsV2) == sizeof(cudaMemAllocNodeParams));

// The work a generic node's parameters describe (cudaGraphAddNode, cudaGraphNodeSetParams);
// memory nodes only where `memory_nodes` (they cannot be changed once made).
absl::StatusOr<NodeWork> WorkOfParams(const cudaGraphNodeParams* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null node parameters");
  switch (params->type) {
    case cudaGraphNodeTypeKernel: {
      const cudaKernelNodeParamsV2& kernel = params->kernel;
      const cudaKernelNodeParams v1{kernel.func,           kernel.gridDim,      kernel.blockDim,
                                    kernel.sharedMemBytes, kernel.kernelParams, kernel.extra};
      return KernelWorkOf(&v1);
    }
    case cudaGraphNodeTypeMemcpy:
      if (params->memcpy.flags != 0) return CudaError(cudaErrorInvalidValue, "memcpy flags");
      return CopyWorkOf(&params->memcpy.copyParams);
    case cudaGraphNodeTypeMemset:
      return MemsetWorkOf(reinterpret_cast<const cudaMemsetParams*>(&params->memset));
    case cudaGraphNodeTypeHost:
      return HostWorkOf(reinterpret_cast<const cudaHostNodeParams*>(&params->host));
    case cudaGraphNodeTypeGraph: {
      TALLY_ASSIGN_OR_RETURN(const Graph* child, FindGraph(params->graph.graph));
      return ChildGraphWork(child->Clone());
    }
    case cudaGraphNodeTypeEventRecord:
      TALLY_RETURN_IF_ERROR(CheckEvent(params->eventRecord.event));
      return EventRecordWork{.event = params->eventRecord.event};
    case cudaGraphNodeTypeWaitEvent:
      TALLY_RETURN_IF_ERROR(CheckEvent(params->eventWait.event));
      return EventWaitWork{.event = params->eventWait.event};
    case cudaGraphNodeTypeEmpty:
      return EmptyWork{};
    default:
      return CudaError(cudaErrorNotSupported,
                       "this kind of graph node is not supported by Tally (client/README.md)");
  }
}

// cudaGraphAddNode: memory nodes as cudaGraphAddMemAllocNode / MemFreeNode make them.
absl::Status AddGenericNode(cudaGraphNode_t* out, cudaGraph_t graph,
                            const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edges,
                            size_t count, cudaGraphNodeParams* params) {
  TALLY_RETURN_IF_ERROR(CheckDefaultEdges(edges, count));
  if (params != nullptr && params->type == cudaGraphNodeTypeMemAlloc) {
    return AddMemAlloc(out, graph, dependencies, count,
                       reinterpret_cast<cudaMemAllocNodeParams*>(&params->alloc));
  }
  if (params != nullptr && params->type == cudaGraphNodeTypeMemFree) {
    return AddMemFree(out, graph, dependencies, count, params->free.dptr);
  }
  TALLY_ASSIGN_OR_RETURN(NodeWork work, WorkOfParams(params));
  return AddNode(out, graph, dependencies, count, std::move(work));
}

// cudaGraphNodeSetParams / cudaGraphExecNodeSetParams: the node keeps its type.
absl::Status SetGenericParams(Node* node, const cudaGraphNodeParams* params) {
  TALLY_ASSIGN_OR_RETURN(NodeWork work, WorkOfParams(params));
  if (work.index() != node->work.index()) {
    return CudaError(cudaErrorInvalidValue, "the parameters are of another node type");
  }
  if (std::holds_alternative<ChildGraphWork>(work)) {
    return CudaError(cudaErrorNotSupported, "a child graph node's graph cannot be replaced");
  }
  node->work = std::move(work);
  return absl::OkStatus();
}

absl::StatusOr<KernelWork> KernelWorkOf(const CUDA_KERNEL_NODE_PARAMS* params) {
  if (params == nullptr) return CudaError(cudaErrorInvalidValue, "null kernel node parameters");
  if (params->func == nullptr) {
    return CudaError(cudaErrorNotSupported,
                     "kernel nodes of a CUkernel (library) are not supported");
  }
  TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, DriverFunction(params->func));
  return KernelWorkFor(*kernel, params->func,
                       dim3(params->gridDimX, params->gridDimY, params->gridDimZ),
                       dim3(params->blockDimX, params->blockDimY, params->blockDimZ),
                       params->sharedMemBytes, params->kernelParams, params->extra);
}

absl::Status GetDriverKernelParams(cudaGraphNode_t node, CUDA_KERNEL_NODE_PARAMS* out) {
  cudaKernelNodeParams runtime{};
  TALLY_RETURN_IF_ERROR(CheckOut(out));
  TALLY_RETURN_IF_ERROR(GetKernelParams(node, &runtime));
  *out = {.func = static_cast<CUfunction>(runtime.func),
          .gridDimX = runtime.gridDim.x,
          .gridDimY = runtime.gridDim.y,
          .gridDimZ = runtime.gridDim.z,
          .blockDimX = runtime.blockDim.x,
          .blockDimY = runtime.blockDim.y,
          .blockDimZ = runtime.blockDim.z,
          .sharedMemBytes = runtime.sharedMemBytes,
          .kernelParams = runtime.kernelParams,
          .extra = nullptr,
          .kern = nullptr,
          .ctx = nullptr};
  return absl::OkStatus();
}

static_assert(sizeof(CUDA_MEMSET_NODE_PARAMS) == sizeof(cudaMemsetParams));
static_assert(sizeof(CUDA_HOST_NODE_PARAMS) == sizeof(cudaHostNodeParams));
static_assert(sizeof(CUgraphExecUpdateResultInfo) == sizeof(cudaGraphExecUpdateResultInfo));
static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == sizeof(cudaGraphInstantiateParams));

}  // namespace
}  // namespace tally::client

using namespace tally::client;  // NOLINT: this file is the graph API's C surface

extern "C" {

cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return CreateGraph(graph, flags); });
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  return RuntimeCall(__func__, [&] { return DestroyGraph(graph); });
}

cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  return RuntimeCall(__func__, [&] { return CloneGraph(clone, original); });
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t* node, cudaGraphNode_t original,
                                     cudaGraph_t clone) {
  return RuntimeCall(__func__, [&] { return FindInClone(node, original, clone); });
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaKernelNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(KernelWork work, KernelWorkOf(params));
    return AddNode(node, graph, dependencies, count, std::move(work));
  });
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams* params) {
  return RuntimeCall(__func__, [&] { return GetKernelParams(node, params); });
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams* params) {
  return RuntimeCall(__func__, [&] { return SetNodeWork(node, KernelWorkOf(params)); });
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaKernelNodeParams* params) {
  return RuntimeCall(__func__, [&] { return SetExecWork(exec, node, KernelWorkOf(params)); });
}

cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaMemcpy3DParms* parms) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(CopyWork work, CopyWorkOf(parms));
    return AddNode(node, graph, dependencies, count, work);
  });
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node, cudaGraph_t graph,
                                     const cudaGraphNode_t* dependencies, size_t count, void* dst,
                                     const void* src, size_t bytes, cudaMemcpyKind kind) {
  return RuntimeCall(__func__, [&] {
    return AddNode(node, graph, dependencies, count, CopyWork1D(dst, src, bytes, kind));
  });
}

cudaError_t cudaGraphMemcpyNodeGetParams(cudaGraphNode_t node, cudaMemcpy3DParms* parms) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(parms));
    TALLY_ASSIGN_OR_RETURN(const CopyWork* work, NodeWorkOf<CopyWork>(node));
    *parms = work->parms;
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphMemcpyNodeSetParams(cudaGraphNode_t node, const cudaMemcpy3DParms* parms) {
  return RuntimeCall(__func__, [&] { return SetNodeWork(node, CopyWorkOf(parms)); });
}

cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void* dst, const void* src,
                                           size_t bytes, cudaMemcpyKind kind) {
  return RuntimeCall(
      __func__, [&] { return SetNodeWork<CopyWork>(node, CopyWork1D(dst, src, bytes, kind)); });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaMemcpy3DParms* parms) {
  return RuntimeCall(__func__, [&] { return SetExecWork(exec, node, CopyWorkOf(parms)); });
}

cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t exec, cudaGraphNode_t node,
                                               void* dst, const void* src, size_t bytes,
                                               cudaMemcpyKind kind) {
  return RuntimeCall(__func__, [&] {
    return SetExecWork<CopyWork>(exec, node, CopyWork1D(dst, src, bytes, kind));
  });
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                   const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaMemsetParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(MemsetWork work, MemsetWorkOf(params));
    return AddNode(node, graph, dependencies, count, work);
  });
}

cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, cudaMemsetParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(params));
    TALLY_ASSIGN_OR_RETURN(const MemsetWork* work, NodeWorkOf<MemsetWork>(node));
    *params = work->params;
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphMemsetNodeSetParams(cudaGraphNode_t node, const cudaMemsetParams* params) {
  return RuntimeCall(__func__, [&] { return SetNodeWork(node, MemsetWorkOf(params)); });
}

cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                             const cudaMemsetParams* params) {
  return RuntimeCall(__func__, [&] { return SetExecWork(exec, node, MemsetWorkOf(params)); });
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                 const cudaGraphNode_t* dependencies, size_t count,
                                 const cudaHostNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(HostWork work, HostWorkOf(params));
    return AddNode(node, graph, dependencies, count, work);
  });
}

cudaError_t cudaGraphHostNodeGetParams(cudaGraphNode_t node, cudaHostNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(params));
    TALLY_ASSIGN_OR_RETURN(const HostWork* work, NodeWorkOf<HostWork>(node));
    *params = {.fn = work->function, .userData = work->data};
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphHostNodeSetParams(cudaGraphNode_t node, const cudaHostNodeParams* params) {
  return RuntimeCall(__func__, [&] { return SetNodeWork(node, HostWorkOf(params)); });
}

cudaError_t cudaGraphExecHostNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                           const cudaHostNodeParams* params) {
  return RuntimeCall(__func__, [&] { return SetExecWork(exec, node, HostWorkOf(params)); });
}

cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                       const cudaGraphNode_t* dependencies, size_t count,
                                       cudaGraph_t child) {
  return RuntimeCall(__func__,
                     [&] { return AddChildGraph(node, graph, dependencies, count, child); });
}

cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t* graph) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(graph));
    TALLY_ASSIGN_OR_RETURN(const ChildGraphWork* work, NodeWorkOf<ChildGraphWork>(node));
    *graph = ToHandle(work->graph.get());
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                  const cudaGraphNode_t* dependencies, size_t count) {
  return RuntimeCall(__func__,
                     [&] { return AddNode(node, graph, dependencies, count, EmptyWork{}); });
}

cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                        const cudaGraphNode_t* dependencies, size_t count,
                                        cudaEvent_t event) {
  return RuntimeCall(__func__, [&] {
    return AddEventNode<EventRecordWork>(node, graph, dependencies, count, event);
  });
}

cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(event));
    TALLY_ASSIGN_OR_RETURN(const EventRecordWork* work, NodeWorkOf<EventRecordWork>(node));
    *event = work->event;
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckEvent(event));
    return SetNodeWork<EventRecordWork>(node, EventRecordWork{.event = event});
  });
}

cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                 cudaEvent_t event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckEvent(event));
    return SetExecWork<EventRecordWork>(exec, node, EventRecordWork{.event = event});
  });
}

cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                      const cudaGraphNode_t* dependencies, size_t count,
                                      cudaEvent_t event) {
  return RuntimeCall(__func__, [&] {
    return AddEventNode<EventWaitWork>(node, graph, dependencies, count, event);
  });
}

cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t* event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(event));
    TALLY_ASSIGN_OR_RETURN(const EventWaitWork* work, NodeWorkOf<EventWaitWork>(node));
    *event = work->event;
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckEvent(event));
    return SetNodeWork<EventWaitWork>(node, EventWaitWork{.event = event});
  });
}

cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t exec, cudaGraphNode_t node,
                                               cudaEvent_t event) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckEvent(event));
    return SetExecWork<EventWaitWork>(exec, node, EventWaitWork{.event = event});
  });
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                     const cudaGraphNode_t* dependencies, size_t count,
                                     cudaMemAllocNodeParams* params) {
  return RuntimeCall(__func__,
                     [&] { return AddMemAlloc(node, graph, dependencies, count, params); });
}

cudaError_t cudaGraphMemAllocNodeGetParams(cudaGraphNode_t node, cudaMemAllocNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(params));
    TALLY_ASSIGN_OR_RETURN(const MemAllocWork* work, NodeWorkOf<MemAllocWork>(node));
    *params = work->params;
    return absl::OkStatus();
  });
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                    const cudaGraphNode_t* dependencies, size_t count,
                                    void* pointer) {
  return RuntimeCall(__func__,
                     [&] { return AddMemFree(node, graph, dependencies, count, pointer); });
}

cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void* pointer) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pointer));
    TALLY_ASSIGN_OR_RETURN(const MemFreeWork* work, NodeWorkOf<MemFreeWork>(node));
    *static_cast<void**>(pointer) = work->pointer;
    return absl::OkStatus();
  });
}

// Tally keeps no cached graph memory beyond what live graphs hold: nothing to trim.
cudaError_t cudaDeviceGraphMemTrim(int device) {
  return RuntimeCall(__func__, [&] { return CheckDevice(device); });
}

cudaError_t cudaGraphAddNode(cudaGraphNode_t* node, cudaGraph_t graph,
                             const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edges,
                             size_t count, cudaGraphNodeParams* params) {
  return RuntimeCall(
      __func__, [&] { return AddGenericNode(node, graph, dependencies, edges, count, params); });
}

cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, cudaGraphNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(Node * found, FindNode(node));
    return SetGenericParams(found, params);
  });
}

cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                       cudaGraphNodeParams* params) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(GraphExec * found, FindExec(exec));
    TALLY_ASSIGN_OR_RETURN(Node * instance, found->Instance(node));
    return SetGenericParams(instance, params);
  });
}

cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char* path, unsigned int) {
  return RuntimeCall(__func__, [&] { return DotPrint(graph, path); });
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType* type) {
  return RuntimeCall(__func__, [&] { return GetType(node, type); });
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  return RuntimeCall(__func__, [&] { return GetNodes(graph, nodes, count); });
}

cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Graph* found, FindGraph(graph));
    std::vector<Node*> roots;
    for (const auto& node : found->nodes) {
      if (node->dependencies.empty()) roots.push_back(node.get());
    }
    return FillList<cudaGraphNode_t, Node>(roots, nodes, nullptr, count);
  });
}

cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t* from, cudaGraphNode_t* to,
                              cudaGraphEdgeData* edges, size_t* count) {
  return RuntimeCall(__func__, [&] { return GetEdges(graph, from, to, edges, count); });
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* dependencies,
                                         cudaGraphEdgeData* edges, size_t* count) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Node* found, FindNode(node));
    return FillList<cudaGraphNode_t, Node>(found->dependencies, dependencies, edges, count);
  });
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t* dependents,
                                           cudaGraphEdgeData* edges, size_t* count) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(const Node* found, FindNode(node));
    return FillList<cudaGraphNode_t, Node>(found->dependents, dependents, edges, count);
  });
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                     const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                     size_t count) {
  return RuntimeCall(__func__, [&] { return ChangeEdges(graph, from, to, edges, count, true); });
}

cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                        const cudaGraphNode_t* to, const cudaGraphEdgeData* edges,
                                        size_t count) {
  return RuntimeCall(__func__, [&] { return ChangeEdges(graph, from, to, edges, count, false); });
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node) {
  return RuntimeCall(__func__, [&] { return DestroyNode(node); });
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags) {
  return RuntimeCall(__func__, [&] { return Instantiate(exec, graph, flags); });
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags) {
  return RuntimeCall(__func__, [&] { return Instantiate(exec, graph, flags); });
}

cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* exec, cudaGraph_t graph,
                                           cudaGraphInstantiateParams* params) {
  return RuntimeCall(__func__, [&] { return InstantiateWithParams(exec, graph, params); });
}

cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t exec, unsigned long long* flags) {
  return RuntimeCall(__func__, [&] { return GetExecFlags(exec, flags); });
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo* info) {
  return RuntimeCall(__func__, [&] { return ExecUpdate(exec, graph, info); });
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return Launch(exec, stream); });
}

cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return Upload(exec, stream); });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  return RuntimeCall(__func__, [&] { return DestroyExec(exec); });
}

// Driver API.

CUresult cuGraphCreate(CUgraph* graph, unsigned int flags) {
  return DriverCall(__func__, [&] { return CreateGraph(graph, flags); });
}

CUresult cuGraphDestroy(CUgraph graph) {
  return DriverCall(__func__, [&] { return DestroyGraph(graph); });
}

CUresult cuGraphClone(CUgraph* clone, CUgraph original) {
  return DriverCall(__func__, [&] { return CloneGraph(clone, original); });
}

CUresult cuGraphNodeFindInClone(CUgraphNode* node, CUgraphNode original, CUgraph clone) {
  return DriverCall(__func__, [&] { return FindInClone(node, original, clone); });
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                 size_t count, const CUDA_KERNEL_NODE_PARAMS* params) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(KernelWork work, KernelWorkOf(params));
    return AddNode(node, graph, dependencies, count, std::move(work));
  });
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* params) {
  return DriverCall(__func__, [&] { return GetDriverKernelParams(node, params); });
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params) {
  return DriverCall(__func__, [&] { return SetNodeWork(node, KernelWorkOf(params)); });
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec exec, CUgraphNode node,
                                           const CUDA_KERNEL_NODE_PARAMS* params) {
  return DriverCall(__func__, [&] { return SetExecWork(exec, node, KernelWorkOf(params)); });
}

// The context is the client's one server context whatever it is (api/context.cc).
CUresult cuGraphAddMemsetNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                              size_t count, const CUDA_MEMSET_NODE_PARAMS* params, CUcontext) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(MemsetWork work,
                           MemsetWorkOf(reinterpret_cast<const cudaMemsetParams*>(params)));
    return AddNode(node, graph, dependencies, count, work);
  });
}

CUresult cuGraphAddHostNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                            size_t count, const CUDA_HOST_NODE_PARAMS* params) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(HostWork work,
                           HostWorkOf(reinterpret_cast<const cudaHostNodeParams*>(params)));
    return AddNode(node, graph, dependencies, count, work);
  });
}

CUresult cuGraphAddEmptyNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                             size_t count) {
  return DriverCall(__func__,
                    [&] { return AddNode(node, graph, dependencies, count, EmptyWork{}); });
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                  size_t count, CUgraph child) {
  return DriverCall(__func__,
                    [&] { return AddChildGraph(node, graph, dependencies, count, child); });
}

CUresult cuGraphAddEventRecordNode(CUgraphNode* node, CUgraph graph,
                                   const CUgraphNode* dependencies, size_t count, CUevent event) {
  return DriverCall(__func__, [&] {
    return AddEventNode<EventRecordWork>(node, graph, dependencies, count, event);
  });
}

CUresult cuGraphAddEventWaitNode(CUgraphNode* node, CUgraph graph, const CUgraphNode* dependencies,
                                 size_t count, CUevent event) {
  return DriverCall(__func__, [&] {
    return AddEventNode<EventWaitWork>(node, graph, dependencies, count, event);
  });
}

CUresult cuGraphAddDependencies_v2(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edges, size_t count) {
  return DriverCall(__func__, [&] {
    return ChangeEdges(graph, from, to, reinterpret_cast<const cudaGraphEdgeData*>(edges), count,
                       true);
  });
}

CUresult cuGraphRemoveDependencies_v2(CUgraph graph, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData* edges, size_t count) {
  return DriverCall(__func__, [&] {
    return ChangeEdges(graph, from, to, reinterpret_cast<const cudaGraphEdgeData*>(edges), count,
                       false);
  });
}

CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  return DriverCall(__func__, [&] { return GetNodes(graph, nodes, count); });
}

CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  static_assert(sizeof(CUgraphNodeType) == sizeof(cudaGraphNodeType));
  return DriverCall(__func__,
                    [&] { return GetType(node, reinterpret_cast<cudaGraphNodeType*>(type)); });
}

CUresult cuGraphDestroyNode(CUgraphNode node) {
  return DriverCall(__func__, [&] { return DestroyNode(node); });
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long flags) {
  return DriverCall(__func__, [&] { return Instantiate(exec, graph, flags); });
}

CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return DriverCall(__func__, [&] {
    return InstantiateWithParams(exec, graph,
                                 reinterpret_cast<cudaGraphInstantiateParams*>(params));
  });
}

CUresult cuGraphExecGetFlags(CUgraphExec exec, cuuint64_t* flags) {
  static_assert(sizeof(cuuint64_t) == sizeof(unsigned long long));
  return DriverCall(
      __func__, [&] { return GetExecFlags(exec, reinterpret_cast<unsigned long long*>(flags)); });
}

CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo* info) {
  return DriverCall(__func__, [&] {
    return ExecUpdate(exec, graph, reinterpret_cast<cudaGraphExecUpdateResultInfo*>(info));
  });
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  return DriverCall(__func__, [&] { return Launch(exec, stream); });
}

CUresult cuGraphUpload(CUgraphExec exec, CUstream stream) {
  return DriverCall(__func__, [&] { return Upload(exec, stream); });
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  return DriverCall(__func__, [&] { return DestroyExec(exec); });
}

}  // extern "C"
