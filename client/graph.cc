#include "client/graph.h"

#include <algorithm>
#include <mutex>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "client/capture.h"
#include "client/copy.h"
#include "client/graph_memory.h"
#include "client/status.h"
#include "client/stream_work.h"
#include "common/status.h"

namespace tally::client {
namespace {

// The live graph objects, by address: what a handle may name.
struct LiveObjects {
  std::mutex mutex;
  absl::flat_hash_set<const void*> graphs;
  absl::flat_hash_set<const void*> nodes;
  absl::flat_hash_set<const void*> execs;
};

LiveObjects& Live() {
  static LiveObjects* const live = new LiveObjects;  // outlives the application's static graphs
  return *live;
}

void Register(absl::flat_hash_set<const void*> LiveObjects::*table, const void* object) {
  std::lock_guard lock(Live().mutex);
  (Live().*table).insert(object);
}

void Unregister(absl::flat_hash_set<const void*> LiveObjects::*table, const void* object) {
  std::lock_guard lock(Live().mutex);
  (Live().*table).erase(object);
}

bool IsLive(absl::flat_hash_set<const void*> LiveObjects::*table, const void* object) {
  std::lock_guard lock(Live().mutex);
  return (Live().*table).contains(object);
}

// The object a handle names, if it is live in `table`.
template <typename Object, typename Handle>
absl::StatusOr<Object*> FindLive(absl::flat_hash_set<const void*> LiveObjects::*table,
                                 Handle handle, const char* what) {
  auto* object = reinterpret_cast<Object*>(handle);
  if (handle == nullptr || !IsLive(table, object)) return CudaError(cudaErrorInvalidValue, what);
  return object;
}

template <typename... Visitors>
struct Overloaded : Visitors... {
  using Visitors::operator()...;
};
// Clang before 17 deduces no aggregate's template arguments by itself (C++20, P1816).
template <typename... Visitors>
Overloaded(Visitors...) -> Overloaded<Visitors...>;

// Replays one node on `stream` through the calls it stands for.
absl::Status RunStep(const Node& node, cudaStream_t stream) {
  return std::visit(
      Overloaded{
          [&](const KernelWork& work) {
            const PackedLaunch& launch = work.launch;
            return PostLaunch(*launch.kernel, launch.grid, launch.block, launch.shared_bytes,
                              stream, launch.params, launch.options);
          },
          [&](const CopyWork& work) { return CopyParms(work.parms, stream, CopyMode::kAsync); },
          [&](const MemsetWork& work) { return MemsetParams(work.params, stream); },
          [&](const HostWork& work) {
            return EnqueueHostFunction(stream, ipc::HostCallbackKind::kHostFunc,
                                       reinterpret_cast<void*>(work.function), work.data);
          },
          [&](const EventRecordWork& work) { return RecordEventOn(work.event, stream); },
          [&](const EventWaitWork& work) { return WaitEventOn(stream, work.event); },
          // Flattened away by Instantiate; the memory of allocation nodes is reserved when the
          // node is made and released with the graph (graph_memory.h).
          [](const ChildGraphWork&) { return absl::OkStatus(); },
          [](const EmptyWork&) { return absl::OkStatus(); },
          [](const MemAllocWork&) { return absl::OkStatus(); },
          [](const MemFreeWork&) { return absl::OkStatus(); },
      },
      node.work);
}

// The steps of `graph` in dependency order, child graphs expanded in place (a child graph's
// nodes run after the child node's dependencies and before its dependents).
absl::Status Flatten(const Graph& graph, std::vector<const Node*>& steps) {
  TALLY_ASSIGN_OR_RETURN(const std::vector<Node*> order, graph.Order());
  for (const Node* node : order) {
    if (const auto* child = std::get_if<ChildGraphWork>(&node->work)) {
      TALLY_RETURN_IF_ERROR(Flatten(*child->graph, steps));
    } else {
      steps.push_back(node);
    }
  }
  return absl::OkStatus();
}

size_t IndexOf(const Graph& graph, const Node* node) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (graph.nodes[i].get() == node) return i;
  }
  return graph.nodes.size();
}

// The indexes of a node's dependencies, sorted: edges compared across two graphs.
std::vector<size_t> DependencyIndexes(const Graph& graph, const Node& node) {
  std::vector<size_t> indexes;
  for (const Node* dependency : node.dependencies) indexes.push_back(IndexOf(graph, dependency));
  std::sort(indexes.begin(), indexes.end());
  return indexes;
}

// Whether `updated` can give its parameters to `instantiated` (cudaGraphExecUpdate's rules that
// apply to the work Tally's graphs hold); the first node that cannot is written to `info`.
bool SameShape(const Graph& instantiated, const Graph& updated,
               cudaGraphExecUpdateResultInfo& info) {
  const auto fail = [&](cudaGraphExecUpdateResult result, Node* node) {
    info.result = result;
    info.errorNode = ToHandle(node);
    return false;
  };
  if (instantiated.nodes.size() != updated.nodes.size()) {
    return fail(cudaGraphExecUpdateErrorTopologyChanged, nullptr);
  }
  for (size_t i = 0; i < updated.nodes.size(); ++i) {
    const Node& mine = *instantiated.nodes[i];
    Node& theirs = *updated.nodes[i];
    if (mine.work.index() != theirs.work.index()) {
      return fail(cudaGraphExecUpdateErrorNodeTypeChanged, &theirs);
    }
    if (DependencyIndexes(instantiated, mine) != DependencyIndexes(updated, theirs)) {
      return fail(cudaGraphExecUpdateErrorTopologyChanged, &theirs);
    }
    if (const auto* child = std::get_if<ChildGraphWork>(&mine.work)) {
      if (!SameShape(*child->graph, *std::get<ChildGraphWork>(theirs.work).graph, info)) {
        return false;
      }
    }
    // Memory nodes cannot change (CUDA Runtime API, cudaGraphExecUpdate): their memory is
    // this instantiation's.
    if (const auto* alloc = std::get_if<MemAllocWork>(&mine.work);
        alloc != nullptr &&
        alloc->params.bytesize != std::get<MemAllocWork>(theirs.work).params.bytesize) {
      return fail(cudaGraphExecUpdateErrorNotSupported, &theirs);
    }
  }
  return true;
}

// Copies the parameters of `updated` into `instantiated`, which SameShape accepted. Nodes stay
// where they are (the steps point to them); memory nodes keep this instantiation's memory.
void TakeParameters(Graph& instantiated, const Graph& updated) {
  for (size_t i = 0; i < updated.nodes.size(); ++i) {
    NodeWork& mine = instantiated.nodes[i]->work;
    const NodeWork& theirs = updated.nodes[i]->work;
    if (auto* child = std::get_if<ChildGraphWork>(&mine)) {
      TakeParameters(*child->graph, *std::get<ChildGraphWork>(theirs).graph);
    } else if (std::holds_alternative<MemAllocWork>(mine) ||
               std::holds_alternative<MemFreeWork>(mine)) {
      continue;
    } else {
      mine = theirs;
    }
  }
}

// This graph's copy of `original`, searched through child graphs too.
Node* FindClone(const Graph& graph, const void* original) {
  for (const auto& node : graph.nodes) {
    if (node->clone_of == original) return node.get();
    if (const auto* child = std::get_if<ChildGraphWork>(&node->work)) {
      if (Node* found = FindClone(*child->graph, original)) return found;
    }
  }
  return nullptr;
}

}  // namespace

cudaGraphNodeType TypeOf(const NodeWork& work) {
  return std::visit(Overloaded{
                        [](const KernelWork&) { return cudaGraphNodeTypeKernel; },
                        [](const CopyWork&) { return cudaGraphNodeTypeMemcpy; },
                        [](const MemsetWork&) { return cudaGraphNodeTypeMemset; },
                        [](const HostWork&) { return cudaGraphNodeTypeHost; },
                        [](const EventRecordWork&) { return cudaGraphNodeTypeEventRecord; },
                        [](const EventWaitWork&) { return cudaGraphNodeTypeWaitEvent; },
                        [](const EmptyWork&) { return cudaGraphNodeTypeEmpty; },
                        [](const ChildGraphWork&) { return cudaGraphNodeTypeGraph; },
                        [](const MemAllocWork&) { return cudaGraphNodeTypeMemAlloc; },
                        [](const MemFreeWork&) { return cudaGraphNodeTypeMemFree; },
                    },
                    work);
}

ChildGraphWork::ChildGraphWork(std::unique_ptr<Graph> child) : graph(std::move(child)) {}
ChildGraphWork::ChildGraphWork(const ChildGraphWork& other) : graph(other.graph->Clone()) {}
ChildGraphWork& ChildGraphWork::operator=(const ChildGraphWork& other) {
  if (this != &other) graph = other.graph->Clone();
  return *this;
}
ChildGraphWork::ChildGraphWork(ChildGraphWork&&) noexcept = default;
ChildGraphWork& ChildGraphWork::operator=(ChildGraphWork&&) noexcept = default;
ChildGraphWork::~ChildGraphWork() = default;

Node::Node(Graph* owner, NodeWork node_work) : graph(owner), work(std::move(node_work)) {
  if (auto* child = std::get_if<ChildGraphWork>(&work)) child->graph->owner = this;
  Register(&LiveObjects::nodes, this);
}

Node::~Node() { Unregister(&LiveObjects::nodes, this); }

Graph::Graph() { Register(&LiveObjects::graphs, this); }

Graph::~Graph() {
  nodes.clear();  // child graphs go first, while this graph is still registered
  Unregister(&LiveObjects::graphs, this);
}

absl::StatusOr<Node*> Graph::Add(NodeWork work, std::span<Node* const> dependencies) {
  for (size_t i = 0; i < dependencies.size(); ++i) {
    if (dependencies[i] == nullptr || dependencies[i]->graph != this) {
      return CudaError(cudaErrorInvalidValue, "a dependency is not a node of this graph");
    }
    if (std::find(dependencies.begin(), dependencies.begin() + i, dependencies[i]) !=
        dependencies.begin() + i) {
      return CudaError(cudaErrorInvalidValue, "a dependency is given twice");
    }
  }
  auto node = std::make_unique<Node>(this, std::move(work));
  for (Node* dependency : dependencies) {
    node->dependencies.push_back(dependency);
    dependency->dependents.push_back(node.get());
  }
  nodes.push_back(std::move(node));
  return nodes.back().get();
}

absl::Status Graph::Connect(Node* from, Node* to) {
  if (from->graph != this || to->graph != this || from == to) {
    return CudaError(cudaErrorInvalidValue, "an edge between nodes of another graph or a loop");
  }
  if (std::find(to->dependencies.begin(), to->dependencies.end(), from) != to->dependencies.end()) {
    return CudaError(cudaErrorInvalidValue, "the edge exists already");
  }
  to->dependencies.push_back(from);
  from->dependents.push_back(to);
  return absl::OkStatus();
}

absl::Status Graph::Disconnect(Node* from, Node* to) {
  const auto edge = std::find(to->dependencies.begin(), to->dependencies.end(), from);
  if (from->graph != this || to->graph != this || edge == to->dependencies.end()) {
    return CudaError(cudaErrorInvalidValue, "no such edge");
  }
  to->dependencies.erase(edge);
  std::erase(from->dependents, to);
  return absl::OkStatus();
}

void Graph::Remove(Node* node) {
  for (Node* dependency : node->dependencies) std::erase(dependency->dependents, node);
  for (Node* dependent : node->dependents) std::erase(dependent->dependencies, node);
  std::erase_if(nodes, [&](const std::unique_ptr<Node>& entry) { return entry.get() == node; });
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto copy = std::make_unique<Graph>();
  absl::flat_hash_map<const Node*, Node*> clones;
  for (const auto& node : nodes) {
    copy->nodes.push_back(std::make_unique<Node>(copy.get(), node->work));
    copy->nodes.back()->clone_of = node.get();
    clones[node.get()] = copy->nodes.back().get();
  }
  for (const auto& node : nodes) {
    Node* clone = clones[node.get()];
    for (const Node* dependency : node->dependencies) {
      clone->dependencies.push_back(clones[dependency]);
      clones[dependency]->dependents.push_back(clone);
    }
  }
  return copy;
}

absl::StatusOr<std::vector<Node*>> Graph::Order() const {
  absl::flat_hash_map<const Node*, size_t> index;
  std::vector<size_t> waiting(nodes.size());
  using Entry = std::pair<size_t, Node*>;  // creation index first: ties go to the older node
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i) {
    index[nodes[i].get()] = i;
    waiting[i] = nodes[i]->dependencies.size();
    if (waiting[i] == 0) ready.emplace(i, nodes[i].get());
  }
  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* node = ready.top().second;
    ready.pop();
    order.push_back(node);
    for (Node* dependent : node->dependents) {
      const size_t i = index[dependent];
      if (--waiting[i] == 0) ready.emplace(i, dependent);
    }
  }
  if (order.size() != nodes.size()) {
    return CudaError(cudaErrorInvalidValue, "the graph's dependencies form a cycle");
  }
  return order;
}

absl::Status CheckDefaultEdges(const cudaGraphEdgeData* edges, size_t count) {
  if (edges == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < count; ++i) {
    if (edges[i].type != cudaGraphDependencyTypeDefault || edges[i].from_port != 0 ||
        edges[i].to_port != 0) {
      return CudaError(cudaErrorNotSupported, "graph edges other than default ones");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Graph*> FindGraph(cudaGraph_t graph) {
  return FindLive<Graph>(&LiveObjects::graphs, graph, "not a live graph");
}

absl::StatusOr<Node*> FindNode(cudaGraphNode_t node) {
  return FindLive<Node>(&LiveObjects::nodes, node, "not a live graph node");
}

absl::StatusOr<Node*> FindNodeOf(cudaGraphNode_t node, const Graph& graph) {
  TALLY_ASSIGN_OR_RETURN(Node * object, FindNode(node));
  if (object->graph != &graph) {
    return CudaError(cudaErrorInvalidValue, "the node belongs to another graph");
  }
  return object;
}

absl::StatusOr<std::unique_ptr<GraphExec>> GraphExec::Instantiate(const Graph& graph,
                                                                  unsigned long long flags) {
  constexpr unsigned long long kKnown =
      cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
      cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if ((flags & ~kKnown) != 0) return CudaError(cudaErrorInvalidValue, "unknown flags");
  if ((flags & cudaGraphInstantiateFlagDeviceLaunch) != 0) {
    return CudaError(cudaErrorNotSupported, "device-launched graphs are not supported by Tally");
  }
  std::unique_ptr<Graph> copy = graph.Clone();
  std::vector<const Node*> steps;
  TALLY_RETURN_IF_ERROR(Flatten(*copy, steps));
  TALLY_ASSIGN_OR_RETURN(cudaEvent_t done, CreateEventWithFlags(cudaEventDisableTiming));
  return std::unique_ptr<GraphExec>(new GraphExec(std::move(copy), std::move(steps), flags, done));
}

GraphExec::GraphExec(std::unique_ptr<Graph> graph, std::vector<const Node*> steps,
                     unsigned long long flags, cudaEvent_t done)
    : graph_(std::move(graph)), steps_(std::move(steps)), flags_(flags), done_(done) {
  Register(&LiveObjects::execs, this);
}

GraphExec::~GraphExec() {
  Unregister(&LiveObjects::execs, this);
  // CUDA lets a graph be destroyed while its launches run: the event is released once they end.
  (void)DestroyEvent(done_);
}

absl::Status GraphExec::Launch(cudaStream_t stream) {
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureWork(stream, [&] {
                           return NodeWork(ChildGraphWork(graph_->Clone()));
                         }));
  if (captured) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(WaitEventOn(stream, done_));
  for (const Node* step : steps_) TALLY_RETURN_IF_ERROR(RunStep(*step, stream));
  return RecordEventOn(done_, stream);
}

absl::Status GraphExec::Update(const Graph& graph, cudaGraphExecUpdateResultInfo& info) {
  info = {.result = cudaGraphExecUpdateSuccess, .errorNode = nullptr, .errorFromNode = nullptr};
  if (!SameShape(*graph_, graph, info)) {
    return CudaError(cudaErrorGraphExecUpdateFailure,
                     "the graph differs from the instantiated one beyond its parameters");
  }
  TakeParameters(*graph_, graph);
  return absl::OkStatus();
}

absl::StatusOr<Node*> GraphExec::Instance(cudaGraphNode_t original) {
  Node* node = FindClone(*graph_, original);
  if (original == nullptr || node == nullptr) {
    return CudaError(cudaErrorInvalidValue, "not a node of the instantiated graph");
  }
  return node;
}

absl::StatusOr<GraphExec*> FindExec(cudaGraphExec_t exec) {
  return FindLive<GraphExec>(&LiveObjects::execs, exec, "not a live executable graph");
}

absl::Status DestroyExec(cudaGraphExec_t exec) {
  TALLY_ASSIGN_OR_RETURN(GraphExec * object, FindExec(exec));
  delete object;
  return absl::OkStatus();
}

}  // namespace tally::client
