// Stream capture (CUDA Runtime API, "Stream Management" and "Graph Management"; CUDA
// Programming Guide, "CUDA Graphs: Creating a Graph Using Stream Capture"): between
// cudaStreamBeginCapture and cudaStreamEndCapture, work issued to a capturing stream becomes
// nodes of a graph instead of running. Streams join a capture by waiting on an event recorded in
// it, and each joined stream's frontier (the nodes its next work depends on) is kept here.
// The stream calls of the shim ask CaptureWork first; while nothing captures, that is one
// relaxed atomic load.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/graph.h"

namespace tally::client {

namespace capture_internal {
// The number of capture sequences in progress in the process.
extern std::atomic<int> active;
absl::StatusOr<bool> CaptureWork(cudaStream_t stream, absl::FunctionRef<NodeWork()> make);
}  // namespace capture_internal

// Whether `stream` is capturing; if so, `make`'s work was added to its graph after the stream's
// frontier and became its frontier. Using the legacy stream while a blocking stream captures is
// cudaErrorStreamCaptureImplicit (and ends that capture's validity); work on an invalidated
// capture is cudaErrorStreamCaptureInvalidated.
template <typename Make>
absl::StatusOr<bool> CaptureWork(cudaStream_t stream, Make&& make) {
  if (capture_internal::active.load(std::memory_order_relaxed) == 0) return false;
  return capture_internal::CaptureWork(stream, make);
}

// The capture rules of calls that wait for work or may synchronise the device implicitly:
// CheckUnsafeCall for calls CUDA calls "potentially unsafe" during capture (cudaMalloc,
// cudaFree, synchronous copies, cudaDeviceSynchronize...), refused by the calling thread's
// capture mode (cudaThreadExchangeStreamCaptureMode) with cudaErrorStreamCaptureUnsupported;
// CheckSynchronizing for calls that wait for a stream (cudaStreamSynchronize, cudaStreamQuery,
// synchronous copies on it): a capturing stream has nothing to wait for, so that is
// cudaErrorStreamCaptureUnsupported and invalidates its capture.
absl::Status CheckUnsafeCall();
absl::Status CheckSynchronizing(cudaStream_t stream);

// cudaEventRecordWithFlags on a capturing stream: the event stands for the stream's frontier
// (or, with cudaEventRecordExternal, becomes an event record node). False if not capturing.
absl::StatusOr<bool> CaptureEventRecord(cudaEvent_t event, cudaStream_t stream, unsigned int flags);
// cudaStreamWaitEvent: a stream waiting on an event captured by a capture joins that capture
// (cudaEventWaitExternal: an event wait node). False if it concerns no capture.
absl::StatusOr<bool> CaptureEventWait(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
// A destroyed event or stream leaves the captures.
void ForgetEvent(cudaEvent_t event);
void ForgetStream(cudaStream_t stream);

absl::Status BeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
// A capture into an existing graph, after `dependencies` (nodes of it).
absl::Status BeginCaptureToGraph(cudaStream_t stream, cudaStreamCaptureMode mode, Graph& graph,
                                 const cudaGraphNode_t* dependencies, size_t count);
// The captured graph (owned by the caller from then on).
absl::StatusOr<Graph*> EndCapture(cudaStream_t stream);
struct CaptureInfo {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  Graph* graph = nullptr;
  // The stream's frontier, valid until the next capture call on the stream.
  const cudaGraphNode_t* dependencies = nullptr;
  const cudaGraphEdgeData* edges = nullptr;  // all default edges
  size_t count = 0;
};
absl::StatusOr<CaptureInfo> GetCaptureInfo(cudaStream_t stream);
// cudaStreamUpdateCaptureDependencies: flags cudaStreamAddCaptureDependencies or
// cudaStreamSetCaptureDependencies.
absl::Status UpdateCaptureDependencies(cudaStream_t stream, const cudaGraphNode_t* nodes,
                                       size_t count, unsigned int flags);
// cudaThreadExchangeStreamCaptureMode.
absl::Status ExchangeCaptureMode(cudaStreamCaptureMode& mode);

}  // namespace tally::client
