// CUDA graphs in the shim (CUDA Runtime API, "Graph Management"): a graph is a record of work
// and its dependencies kept in the application's process; an instantiated graph (GraphExec)
// replays its nodes on the launch stream, in an order that respects every dependency, through
// the same one-way requests as the stream calls they stand for. So a graph's kernels reach the
// server's scheduler as any launch does, and what the server allows a stream call, it allows a
// graph node. Graph objects are not thread-safe (CUDA's are not either); only the tables that
// tell live handles from stale or forged ones take a lock.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/launch.h"

namespace tally::client {

struct Graph;

// A kernel launch: resolved, its arguments copied and packed at the node's creation.
struct KernelWork {
  PackedLaunch launch;
  const void* function = nullptr;        // as the application named it (host stub or CUfunction)
  std::vector<void*> argument_pointers;  // into launch.params, for GetParams' kernelParams
};
struct CopyWork {
  cudaMemcpy3DParms parms{};  // linear memory (no CUDA arrays)
};
struct MemsetWork {
  cudaMemsetParams params{};
};
struct HostWork {
  cudaHostFn_t function = nullptr;
  void* data = nullptr;
};
struct EventRecordWork {
  cudaEvent_t event = nullptr;
};
struct EventWaitWork {
  cudaEvent_t event = nullptr;
};
struct EmptyWork {};
// The child graph is the node's own copy (CUDA clones it into the node).
struct ChildGraphWork {
  explicit ChildGraphWork(std::unique_ptr<Graph> child);
  ChildGraphWork(const ChildGraphWork& other);  // clones the child
  ChildGraphWork& operator=(const ChildGraphWork& other);
  ChildGraphWork(ChildGraphWork&&) noexcept;
  ChildGraphWork& operator=(ChildGraphWork&&) noexcept;
  ~ChildGraphWork();
  std::unique_ptr<Graph> graph;
};

// Device memory a graph's allocation node reserved: it lives as long as any graph, clone or
// instantiation that holds the node, and the application's cudaFree/cudaFreeAsync of it are
// no-ops meanwhile (graph_memory.h).
class GraphAllocation;
struct MemAllocWork {
  std::shared_ptr<GraphAllocation> allocation;
  cudaMemAllocNodeParams params{};  // poolProps and bytesize as given; dptr the reserved memory
};
struct MemFreeWork {
  void* pointer = nullptr;
};

using NodeWork = std::variant<KernelWork, CopyWork, MemsetWork, HostWork, EventRecordWork,
                              EventWaitWork, EmptyWork, ChildGraphWork, MemAllocWork, MemFreeWork>;

// The cudaGraphNodeType of a node's work.
cudaGraphNodeType TypeOf(const NodeWork& work);

struct Node {
  Node(Graph* owner, NodeWork node_work);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Graph* graph;
  NodeWork work;
  std::vector<Node*> dependencies;  // edges into this node, in the order they were added
  std::vector<Node*> dependents;    // edges out of it
  const Node* clone_of = nullptr;   // the node this one was cloned from (compared, never read)
};

struct Graph {
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a node after `dependencies` (nodes of this graph, no duplicates).
  absl::StatusOr<Node*> Add(NodeWork work, std::span<Node* const> dependencies);
  // Adds the edge from -> to (both of this graph); cudaErrorInvalidValue if it exists.
  absl::Status Connect(Node* from, Node* to);
  // Removes the edge; cudaErrorInvalidValue if there is none.
  absl::Status Disconnect(Node* from, Node* to);
  // Removes a node and its edges.
  void Remove(Node* node);
  // A deep copy: every node's clone_of names its original.
  std::unique_ptr<Graph> Clone() const;
  // The nodes in an order that respects every edge (ties broken by creation order);
  // cudaErrorInvalidValue when the edges make a cycle.
  absl::StatusOr<std::vector<Node*>> Order() const;

  std::vector<std::unique_ptr<Node>> nodes;  // in creation order
  Node* owner = nullptr;                     // the child graph node embedding this graph
};

// The objects behind handles the application holds: a handle that names none (destroyed,
// forged, or of another kind) is cudaErrorInvalidValue, as CUDA reports it for graphs.
absl::StatusOr<Graph*> FindGraph(cudaGraph_t graph);
absl::StatusOr<Node*> FindNode(cudaGraphNode_t node);
// FindNode, and the node must belong to `graph`.
absl::StatusOr<Node*> FindNodeOf(cudaGraphNode_t node, const Graph& graph);
// Tally's graphs have default edges only: cudaErrorNotSupported for any other.
absl::Status CheckDefaultEdges(const cudaGraphEdgeData* edges, size_t count);
inline cudaGraph_t ToHandle(Graph* graph) { return reinterpret_cast<cudaGraph_t>(graph); }
inline cudaGraphNode_t ToHandle(Node* node) { return reinterpret_cast<cudaGraphNode_t>(node); }

// An instantiated graph: its own copy of the graph, replayed step by step on the launch stream.
class GraphExec {
 public:
  // cudaErrorInvalidValue for a graph with a cycle.
  static absl::StatusOr<std::unique_ptr<GraphExec>> Instantiate(const Graph& graph,
                                                                unsigned long long flags);
  ~GraphExec();

  // Replays every node on `stream` after the previous launch of this graph, wherever it ran
  // (CUDA never runs one instantiation twice at once); into a capturing stream, adds the graph
  // as a child graph node instead.
  absl::Status Launch(cudaStream_t stream);
  // cudaGraphExecUpdate: takes the parameters of `graph`, which must have this graph's
  // topology and node types (nodes are paired in creation order); otherwise nothing changes,
  // `info` says why and the status is cudaErrorGraphExecUpdateFailure.
  absl::Status Update(const Graph& graph, cudaGraphExecUpdateResultInfo& info);
  // This instantiation's copy of a node of the graph it came from (ExecXxxNodeSetParams).
  absl::StatusOr<Node*> Instance(cudaGraphNode_t original);
  unsigned long long flags() const { return flags_; }

 private:
  GraphExec(std::unique_ptr<Graph> graph, std::vector<const Node*> steps, unsigned long long flags,
            cudaEvent_t done);

  std::unique_ptr<Graph> graph_;
  std::vector<const Node*> steps_;  // child graphs flattened
  unsigned long long flags_;
  cudaEvent_t done_;  // recorded after each launch: orders launches on different streams
};

absl::StatusOr<GraphExec*> FindExec(cudaGraphExec_t exec);
inline cudaGraphExec_t ToHandle(GraphExec* exec) { return reinterpret_cast<cudaGraphExec_t>(exec); }
// Destroys a GraphExec made by Instantiate (released from its unique_ptr into the handle).
absl::Status DestroyExec(cudaGraphExec_t exec);

}  // namespace tally::client
