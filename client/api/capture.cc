// Stream capture, runtime and driver API (CUDA Runtime API, "Stream Management"): the capture
// itself is client/capture.h's. CUstreamCaptureStatus/Mode and their runtime forms share values,
// and CUgraph/CUgraphNode are the runtime's handles.
#include "client/capture.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "client/entry.h"
#include "client/graph.h"
#include "client/handles.h"
#include "client/status.h"
#include "client/streams.h"
#include "common/status.h"

using tally::client::CaptureInfo;
using tally::client::CheckDefaultEdges;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::ToHandle;

namespace {

absl::Status Begin(cudaStream_t stream, int mode) {
  return tally::client::BeginCapture(stream, static_cast<cudaStreamCaptureMode>(mode));
}

absl::Status BeginToGraph(cudaStream_t stream, cudaGraph_t graph,
                          const cudaGraphNode_t* dependencies, const cudaGraphEdgeData* edges,
                          size_t count, int mode) {
  TALLY_RETURN_IF_ERROR(CheckDefaultEdges(edges, count));
  TALLY_ASSIGN_OR_RETURN(tally::client::Graph * into, tally::client::FindGraph(graph));
  return tally::client::BeginCaptureToGraph(stream, static_cast<cudaStreamCaptureMode>(mode), *into,
                                            dependencies, count);
}

// The graph is NULL when the capture failed (CUDA Runtime API, cudaStreamEndCapture).
absl::Status End(cudaStream_t stream, cudaGraph_t* graph) {
  TALLY_RETURN_IF_ERROR(CheckOut(graph));
  *graph = nullptr;
  TALLY_ASSIGN_OR_RETURN(tally::client::Graph * captured, tally::client::EndCapture(stream));
  *graph = ToHandle(captured);
  return absl::OkStatus();
}

absl::Status IsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  TALLY_RETURN_IF_ERROR(CheckOut(status));
  TALLY_ASSIGN_OR_RETURN(const CaptureInfo info, tally::client::GetCaptureInfo(stream));
  *status = info.status;
  return absl::OkStatus();
}

// Every output but the status may be null; the others are written only while the stream
// captures (CUDA Runtime API, cudaStreamGetCaptureInfo).
template <typename Status, typename Id, typename GraphHandle, typename NodeHandle,
          typename EdgeData>
absl::Status GetInfo(cudaStream_t stream, Status* status, Id* id, GraphHandle* graph,
                     const NodeHandle** dependencies, const EdgeData** edges, size_t* count) {
  static_assert(sizeof(EdgeData) == sizeof(cudaGraphEdgeData));
  TALLY_RETURN_IF_ERROR(CheckOut(status));
  TALLY_ASSIGN_OR_RETURN(const CaptureInfo info, tally::client::GetCaptureInfo(stream));
  *status = static_cast<Status>(info.status);
  if (info.status == cudaStreamCaptureStatusNone) return absl::OkStatus();
  if (id != nullptr) *id = info.id;
  if (info.status != cudaStreamCaptureStatusActive) return absl::OkStatus();
  if (graph != nullptr) *graph = reinterpret_cast<GraphHandle>(ToHandle(info.graph));
  if (dependencies != nullptr) {
    *dependencies = reinterpret_cast<const NodeHandle*>(info.dependencies);
  }
  if (edges != nullptr) *edges = reinterpret_cast<const EdgeData*>(info.edges);
  if (count != nullptr) *count = info.count;
  return absl::OkStatus();
}

absl::Status UpdateDependencies(cudaStream_t stream, const cudaGraphNode_t* nodes,
                                const cudaGraphEdgeData* edges, size_t count, unsigned int flags) {
  TALLY_RETURN_IF_ERROR(CheckDefaultEdges(edges, count));
  return tally::client::UpdateCaptureDependencies(stream, nodes, count, flags);
}

absl::Status ExchangeMode(int* mode) {
  TALLY_RETURN_IF_ERROR(CheckOut(mode));
  auto exchanged = static_cast<cudaStreamCaptureMode>(*mode);
  TALLY_RETURN_IF_ERROR(tally::client::ExchangeCaptureMode(exchanged));
  *mode = exchanged;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  return RuntimeCall(__func__, [&] { return Begin(stream, mode); });
}

cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* edges, size_t count,
                                          cudaStreamCaptureMode mode) {
  return RuntimeCall(__func__,
                     [&] { return BeginToGraph(stream, graph, dependencies, edges, count, mode); });
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  return RuntimeCall(__func__, [&] { return End(stream, graph); });
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  return RuntimeCall(__func__, [&] { return IsCapturing(stream, status); });
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                     unsigned long long* id, cudaGraph_t* graph,
                                     const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edges, size_t* count) {
  return RuntimeCall(
      __func__, [&] { return GetInfo(stream, status, id, graph, dependencies, edges, count); });
}

cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t* nodes,
                                                const cudaGraphEdgeData* edges, size_t count,
                                                unsigned int flags) {
  return RuntimeCall(__func__,
                     [&] { return UpdateDependencies(stream, nodes, edges, count, flags); });
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  return RuntimeCall(__func__, [&] { return ExchangeMode(reinterpret_cast<int*>(mode)); });
}

// Driver API (CUDA Driver API, "Stream Management").

CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return DriverCall(__func__, [&] { return Begin(stream, mode); });
}

CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                     const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                                     size_t count, CUstreamCaptureMode mode) {
  return DriverCall(__func__, [&] {
    return BeginToGraph(stream, graph, dependencies,
                        reinterpret_cast<const cudaGraphEdgeData*>(edges), count, mode);
  });
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return DriverCall(__func__, [&] { return End(stream, reinterpret_cast<cudaGraph_t*>(graph)); });
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  return DriverCall(__func__, [&] {
    return IsCapturing(stream, reinterpret_cast<cudaStreamCaptureStatus*>(status));
  });
}

CUresult cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** dependencies,
                                   const CUgraphEdgeData** edges, size_t* count) {
  return DriverCall(__func__,
                    [&] { return GetInfo(stream, status, id, graph, dependencies, edges, count); });
}

CUresult cuStreamUpdateCaptureDependencies_v2(CUstream stream, CUgraphNode* nodes,
                                              const CUgraphEdgeData* edges, size_t count,
                                              unsigned int flags) {
  return DriverCall(__func__, [&] {
    return UpdateDependencies(stream, reinterpret_cast<cudaGraphNode_t*>(nodes),
                              reinterpret_cast<const cudaGraphEdgeData*>(edges), count, flags);
  });
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  return DriverCall(__func__, [&] { return ExchangeMode(reinterpret_cast<int*>(mode)); });
}

}  // extern "C"
