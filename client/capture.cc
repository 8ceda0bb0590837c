#include "client/capture.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "client/handles.h"
#include "client/status.h"
#include "client/streams.h"
#include "common/status.h"

namespace tally::client {

std::atomic<int> capture_internal::active{0};

namespace {

// One capture: begun on its origin stream, joined by the streams that waited on its events.
struct Sequence {
  unsigned long long id = 0;
  std::unique_ptr<Graph> owned;  // the graph cudaStreamBeginCapture made, until it is handed out
  Graph* graph = nullptr;        // that one, or cudaStreamBeginCaptureToGraph's
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  uint64_t origin = 0;
  absl::flat_hash_map<uint64_t, std::vector<Node*>> frontier;  // by joined stream
  absl::flat_hash_set<uint64_t> blocking;  // joined streams that synchronise with the legacy one
  absl::Status invalid;                    // why the capture was invalidated, if it was
  // GetCaptureInfo's answers, kept until the next call.
  std::vector<cudaGraphNode_t> info_nodes;
  std::vector<cudaGraphEdgeData> info_edges;
};

// An event recorded in a capture: the frontier it stands for.
struct CapturedEvent {
  std::weak_ptr<Sequence> sequence;
  std::vector<Node*> nodes;
};

thread_local cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;
// Captures this thread began that were not relaxed, and of those the global ones.
thread_local int own_strict_captures = 0;
thread_local int own_global_captures = 0;

absl::Status CheckMode(cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return CudaError(cudaErrorInvalidValue, "unknown stream capture mode");
  }
  return absl::OkStatus();
}

// Adds the nodes the frontier does not hold yet.
void AddToFrontier(std::vector<Node*>& frontier, const std::vector<Node*>& nodes) {
  for (Node* node : nodes) {
    if (std::find(frontier.begin(), frontier.end(), node) == frontier.end()) {
      frontier.push_back(node);
    }
  }
}

absl::Status Invalidated() {
  return CudaError(cudaErrorStreamCaptureInvalidated, "the stream's capture was invalidated");
}

class Captures {
 public:
  static Captures& Get() {
    static Captures* const captures = new Captures;
    return *captures;
  }

  absl::Status Begin(cudaStream_t stream, cudaStreamCaptureMode mode, Graph* into,
                     std::vector<Node*> frontier) {
    TALLY_RETURN_IF_ERROR(CheckMode(mode));
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) {
      return CudaError(cudaErrorStreamCaptureUnsupported,
                       "the legacy default stream cannot capture");
    }
    TALLY_ASSIGN_OR_RETURN(const StreamInfo info, Streams::Get().Find(stream));
    std::lock_guard lock(mutex_);
    if (by_stream_.contains(handle)) {
      return CudaError(cudaErrorIllegalState, "the stream is capturing already");
    }
    auto sequence = std::make_shared<Sequence>();
    if (into == nullptr) {
      sequence->owned = std::make_unique<Graph>();
      into = sequence->owned.get();
    }
    sequence->graph = into;
    sequence->id = next_id_++;
    sequence->mode = mode;
    sequence->thread = std::this_thread::get_id();
    sequence->origin = handle;
    Join(sequence, handle, info.flags, std::move(frontier));
    if (mode != cudaStreamCaptureModeRelaxed) ++own_strict_captures;
    if (mode == cudaStreamCaptureModeGlobal) {
      ++own_global_captures;
      ++global_captures_;
    }
    capture_internal::active.fetch_add(1, std::memory_order_relaxed);
    return absl::OkStatus();
  }

  absl::StatusOr<Graph*> End(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    const auto it = by_stream_.find(handle);
    if (it == by_stream_.end()) {
      return CudaError(cudaErrorIllegalState, "the stream is not capturing");
    }
    const std::shared_ptr<Sequence> sequence = it->second;
    if (sequence->origin != handle) {
      return CudaError(cudaErrorStreamCaptureUnmatched, "the capture was begun on another stream");
    }
    if (sequence->mode != cudaStreamCaptureModeRelaxed &&
        sequence->thread != std::this_thread::get_id()) {
      return CudaError(cudaErrorStreamCaptureWrongThread,
                       "the capture was begun on another thread");
    }
    Finish(*sequence);
    TALLY_RETURN_IF_ERROR(sequence->invalid);
    if (!Joined(*sequence)) {
      return CudaError(cudaErrorStreamCaptureUnjoined,
                       "a stream that joined the capture was not joined back into its origin");
    }
    sequence->owned.release();  // the caller's now
    return sequence->graph;
  }

  absl::StatusOr<bool> Work(cudaStream_t stream, absl::FunctionRef<NodeWork()> make) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) {
      TALLY_RETURN_IF_ERROR(CheckLegacyUse());
      return false;
    }
    const auto it = by_stream_.find(handle);
    if (it == by_stream_.end()) return false;
    Sequence& sequence = *it->second;
    TALLY_RETURN_IF_ERROR(sequence.invalid);
    std::vector<Node*>& frontier = sequence.frontier[handle];
    absl::StatusOr<Node*> node = sequence.graph->Add(make(), frontier);
    if (!node.ok()) {
      sequence.invalid = Invalidated();
      return node.status();
    }
    frontier = {*node};
    return true;
  }

  absl::Status Synchronizing(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) return CheckLegacyUse();
    const auto it = by_stream_.find(handle);
    if (it == by_stream_.end()) return absl::OkStatus();
    it->second->invalid = Invalidated();
    return CudaError(cudaErrorStreamCaptureUnsupported,
                     "a capturing stream cannot be synchronised or queried");
  }

  absl::Status UnsafeCall() {
    if (thread_mode == cudaStreamCaptureModeRelaxed) return absl::OkStatus();
    std::lock_guard lock(mutex_);
    const bool others_global = global_captures_ > own_global_captures;
    if (own_strict_captures > 0 || (thread_mode == cudaStreamCaptureModeGlobal && others_global)) {
      for (auto& [handle, sequence] : by_stream_) {
        if (sequence->thread == std::this_thread::get_id()) sequence->invalid = Invalidated();
      }
      return CudaError(cudaErrorStreamCaptureUnsupported,
                       "a potentially unsafe call while a stream captures (see "
                       "cudaThreadExchangeStreamCaptureMode)");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<bool> EventRecord(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) TALLY_RETURN_IF_ERROR(CheckLegacyUse());
    const auto it = by_stream_.find(handle);
    if (it == by_stream_.end()) {
      events_.erase(event);  // recorded for real from now on
      return false;
    }
    Sequence& sequence = *it->second;
    TALLY_RETURN_IF_ERROR(sequence.invalid);
    std::vector<Node*>& frontier = sequence.frontier[handle];
    if ((flags & cudaEventRecordExternal) != 0) {
      TALLY_ASSIGN_OR_RETURN(Node * node,
                             sequence.graph->Add(EventRecordWork{.event = event}, frontier));
      frontier = {node};
      return true;
    }
    events_[event] = CapturedEvent{.sequence = it->second, .nodes = frontier};
    return true;
  }

  absl::StatusOr<bool> EventWait(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) TALLY_RETURN_IF_ERROR(CheckLegacyUse());
    const auto stream_it = by_stream_.find(handle);
    Sequence* capturing = stream_it == by_stream_.end() ? nullptr : stream_it->second.get();
    if (capturing != nullptr) TALLY_RETURN_IF_ERROR(capturing->invalid);
    if (capturing != nullptr && (flags & cudaEventWaitExternal) != 0) {
      std::vector<Node*>& frontier = capturing->frontier[handle];
      TALLY_ASSIGN_OR_RETURN(Node * node,
                             capturing->graph->Add(EventWaitWork{.event = event}, frontier));
      frontier = {node};
      return true;
    }
    const auto event_it = events_.find(event);
    std::shared_ptr<Sequence> recorded;
    if (event_it != events_.end()) recorded = event_it->second.sequence.lock();
    if (recorded == nullptr || !recorded->invalid.ok() || !by_stream_.contains(recorded->origin)) {
      if (capturing == nullptr) return false;
      capturing->invalid = Invalidated();
      return CudaError(cudaErrorStreamCaptureIsolation,
                       "a capturing stream waits on an event recorded outside its capture");
    }
    const std::vector<Node*>& nodes = event_it->second.nodes;
    if (capturing == nullptr) {
      TALLY_ASSIGN_OR_RETURN(const StreamInfo info, Streams::Get().Find(stream));
      Join(recorded, handle, info.flags, nodes);
      return true;
    }
    if (capturing != recorded.get()) {
      capturing->invalid = Invalidated();
      recorded->invalid = Invalidated();
      return CudaError(cudaErrorStreamCaptureMerge, "two captures cannot be merged");
    }
    AddToFrontier(capturing->frontier[handle], nodes);
    return true;
  }

  void ForgetEvent(cudaEvent_t event) {
    std::lock_guard lock(mutex_);
    events_.erase(event);
  }

  void ForgetStream(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    const auto it = by_stream_.find(StreamHandle(stream));
    if (it == by_stream_.end()) return;
    const std::shared_ptr<Sequence> sequence = it->second;
    if (sequence->origin == it->first) {
      sequence->invalid = Invalidated();
      Finish(*sequence);  // the capture can never end: its graph goes with it
      return;
    }
    // A joined stream whose work was joined back into the origin is no longer needed: CUDA lets
    // it go. One whose work was not would leave that work out of the graph.
    if (!JoinedBack(*sequence, sequence->frontier[it->first])) sequence->invalid = Invalidated();
    sequence->frontier.erase(it->first);
    by_stream_.erase(it);
  }

  absl::StatusOr<CaptureInfo> Info(cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    const uint64_t handle = StreamHandle(stream);
    if (handle == 0) {
      TALLY_RETURN_IF_ERROR(CheckLegacyUse());
      return CaptureInfo{};
    }
    const auto it = by_stream_.find(handle);
    if (it == by_stream_.end()) return CaptureInfo{};
    Sequence& sequence = *it->second;
    CaptureInfo info{.id = sequence.id};
    if (!sequence.invalid.ok()) {
      info.status = cudaStreamCaptureStatusInvalidated;
      return info;
    }
    const std::vector<Node*>& frontier = sequence.frontier[handle];
    sequence.info_nodes.clear();
    for (Node* node : frontier) sequence.info_nodes.push_back(ToHandle(node));
    sequence.info_edges.assign(frontier.size(), cudaGraphEdgeData{});
    info.status = cudaStreamCaptureStatusActive;
    info.graph = sequence.graph;
    info.dependencies = sequence.info_nodes.data();
    info.edges = sequence.info_edges.data();
    info.count = frontier.size();
    return info;
  }

  absl::Status UpdateDependencies(cudaStream_t stream, const cudaGraphNode_t* nodes, size_t count,
                                  unsigned int flags) {
    if (flags != cudaStreamAddCaptureDependencies && flags != cudaStreamSetCaptureDependencies) {
      return CudaError(cudaErrorInvalidValue, "unknown capture dependency flags");
    }
    if (count > 0 && nodes == nullptr) return CudaError(cudaErrorInvalidValue, "null nodes");
    std::lock_guard lock(mutex_);
    const auto it = by_stream_.find(StreamHandle(stream));
    if (it == by_stream_.end()) {
      return CudaError(cudaErrorIllegalState, "the stream is not capturing");
    }
    Sequence& sequence = *it->second;
    TALLY_RETURN_IF_ERROR(sequence.invalid);
    std::vector<Node*> given;
    for (size_t i = 0; i < count; ++i) {
      TALLY_ASSIGN_OR_RETURN(Node * node, FindNodeOf(nodes[i], *sequence.graph));
      given.push_back(node);
    }
    std::vector<Node*>& frontier = sequence.frontier[it->first];
    if (flags == cudaStreamSetCaptureDependencies) frontier.clear();
    AddToFrontier(frontier, given);
    return absl::OkStatus();
  }

 private:
  Captures() = default;

  // The caller holds mutex_.
  void Join(const std::shared_ptr<Sequence>& sequence, uint64_t handle, unsigned int flags,
            std::vector<Node*> frontier) {
    by_stream_[handle] = sequence;
    sequence->frontier[handle] = std::move(frontier);
    if ((flags & cudaStreamNonBlocking) == 0) sequence->blocking.insert(handle);
  }

  // Ends a capture: its streams capture no more. The caller holds mutex_.
  void Finish(Sequence& sequence) {
    for (const auto& [handle, frontier] : sequence.frontier) by_stream_.erase(handle);
    const bool own = sequence.thread == std::this_thread::get_id();
    if (sequence.mode != cudaStreamCaptureModeRelaxed && own) --own_strict_captures;
    if (sequence.mode == cudaStreamCaptureModeGlobal) {
      --global_captures_;
      if (own) --own_global_captures;
    }
    capture_internal::active.fetch_sub(1, std::memory_order_relaxed);
  }

  // Whether every joined stream's frontier was joined back into the origin's.
  static bool Joined(const Sequence& sequence) {
    return std::all_of(sequence.frontier.begin(), sequence.frontier.end(),
                       [&](const auto& entry) { return JoinedBack(sequence, entry.second); });
  }

  // Whether each node of `frontier` is (an ancestor of) a node of the origin's frontier.
  static bool JoinedBack(const Sequence& sequence, const std::vector<Node*>& frontier) {
    absl::flat_hash_set<const Node*> reached;
    std::vector<const Node*> pending;
    if (const auto origin = sequence.frontier.find(sequence.origin);
        origin != sequence.frontier.end()) {
      pending.assign(origin->second.begin(), origin->second.end());
    }
    while (!pending.empty()) {
      const Node* node = pending.back();
      pending.pop_back();
      if (!reached.insert(node).second) continue;
      pending.insert(pending.end(), node->dependencies.begin(), node->dependencies.end());
    }
    return std::all_of(frontier.begin(), frontier.end(),
                       [&](const Node* node) { return reached.contains(node); });
  }

  // The legacy stream synchronises with every blocking stream, which a capture cannot record:
  // using it invalidates the captures of blocking streams. The caller holds mutex_.
  absl::Status CheckLegacyUse() {
    bool implicit = false;
    for (auto& [handle, sequence] : by_stream_) {
      if (sequence->blocking.contains(handle)) {
        sequence->invalid = Invalidated();
        implicit = true;
      }
    }
    if (!implicit) return absl::OkStatus();
    return CudaError(cudaErrorStreamCaptureImplicit,
                     "the legacy stream was used while a blocking stream captures");
  }

  std::mutex mutex_;
  unsigned long long next_id_ = 1;
  int global_captures_ = 0;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Sequence>> by_stream_;
  absl::flat_hash_map<cudaEvent_t, CapturedEvent> events_;
};

}  // namespace

absl::StatusOr<bool> capture_internal::CaptureWork(cudaStream_t stream,
                                                   absl::FunctionRef<NodeWork()> make) {
  return Captures::Get().Work(stream, make);
}

absl::Status CheckUnsafeCall() {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return absl::OkStatus();
  return Captures::Get().UnsafeCall();
}

absl::Status CheckSynchronizing(cudaStream_t stream) {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return absl::OkStatus();
  return Captures::Get().Synchronizing(stream);
}

// While nothing captures, an event's record of an ended capture stays: a capture that waits on
// the event later finds that capture gone, as if the event had been recorded outside.
absl::StatusOr<bool> CaptureEventRecord(cudaEvent_t event, cudaStream_t stream,
                                        unsigned int flags) {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return false;
  return Captures::Get().EventRecord(event, stream, flags);
}

absl::StatusOr<bool> CaptureEventWait(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return false;
  return Captures::Get().EventWait(stream, event, flags);
}

void ForgetEvent(cudaEvent_t event) { Captures::Get().ForgetEvent(event); }
void ForgetStream(cudaStream_t stream) {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return;
  Captures::Get().ForgetStream(stream);
}

absl::Status BeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  return Captures::Get().Begin(stream, mode, nullptr, {});
}

absl::Status BeginCaptureToGraph(cudaStream_t stream, cudaStreamCaptureMode mode, Graph& graph,
                                 const cudaGraphNode_t* dependencies, size_t count) {
  if (count > 0 && dependencies == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null dependencies");
  }
  std::vector<Node*> frontier;
  for (size_t i = 0; i < count; ++i) {
    TALLY_ASSIGN_OR_RETURN(Node * node, FindNodeOf(dependencies[i], graph));
    frontier.push_back(node);
  }
  return Captures::Get().Begin(stream, mode, &graph, std::move(frontier));
}

absl::StatusOr<Graph*> EndCapture(cudaStream_t stream) { return Captures::Get().End(stream); }

absl::StatusOr<CaptureInfo> GetCaptureInfo(cudaStream_t stream) {
  TALLY_RETURN_IF_ERROR(Streams::Get().Find(stream).status());
  return Captures::Get().Info(stream);
}

absl::Status UpdateCaptureDependencies(cudaStream_t stream, const cudaGraphNode_t* nodes,
                                       size_t count, unsigned int flags) {
  return Captures::Get().UpdateDependencies(stream, nodes, count, flags);
}

absl::Status ExchangeCaptureMode(cudaStreamCaptureMode& mode) {
  TALLY_RETURN_IF_ERROR(CheckMode(mode));
  std::swap(mode, thread_mode);
  return absl::OkStatus();
}

}  // namespace tally::client
