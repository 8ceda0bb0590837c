// CUDA graphs through Tally: graphs built node by node (kernel, memset, memcpy, host, event,
// empty, child graph, memory allocation and free nodes), stream capture across streams joined by
// events (global, thread-local and relaxed modes; capture queries; the errors CUDA gives for
// illegal calls during a capture), clone, instantiate, update, upload, launch and destroy. Each
// graph's results are compared with values computed here, launch after launch.
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

namespace {

constexpr int kCount = 1024;
constexpr int kThreads = 128;
constexpr int kBlocks = kCount / kThreads;

__global__ void AddTo(int* data, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCount) data[i] += value;
}

__global__ void Scale(int* data, int factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCount) data[i] *= factor;
}

// out[i] = a[i] + b[i]
__global__ void Sum(const int* a, const int* b, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCount) out[i] = a[i] + b[i];
}

std::atomic<int> host_calls{0};
void CountCall(void* data) {
  host_calls.fetch_add(1);
  *static_cast<int*>(data) += 1;
}

cudaGraphNode_t AddKernel(cudaGraph_t graph, std::vector<cudaGraphNode_t> after, void* function,
                          void** args) {
  cudaKernelNodeParams params{};
  params.func = function;
  params.gridDim = dim3(kBlocks);
  params.blockDim = dim3(kThreads);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, graph, after.data(), after.size(), &params));
  return node;
}

size_t NodeCount(cudaGraph_t graph) {
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  return count;
}

// memset 0 -> +5 -> (x3 | +0 on a copy) -> sum -> copy to host -> host node; launched three
// times, with the +5 changed in the instantiated graph before the last launch.
void ExplicitGraph(cudaStream_t stream) {
  int *a = nullptr, *b = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kCount * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, kCount * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kCount * sizeof(int)));
  static int host[kCount];
  int host_counter = 0;

  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemsetParams memset{};
  memset.dst = a;
  memset.value = 0;
  memset.elementSize = 4;
  memset.width = kCount;
  memset.height = 1;
  cudaGraphNode_t zero = nullptr;
  CHECK_CUDA(cudaGraphAddMemsetNode(&zero, graph, nullptr, 0, &memset));
  int five = 5;
  void* add_args[] = {&a, &five};
  cudaGraphNode_t add = AddKernel(graph, {zero}, reinterpret_cast<void*>(AddTo), add_args);
  cudaGraphNode_t copy_ab = nullptr;
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copy_ab, graph, &add, 1, b, a, kCount * sizeof(int),
                                      cudaMemcpyDeviceToDevice));
  int three = 3;
  void* scale_args[] = {&a, &three};
  cudaGraphNode_t scale = AddKernel(graph, {copy_ab}, reinterpret_cast<void*>(Scale), scale_args);
  cudaGraphNode_t idle = nullptr;
  CHECK_CUDA(cudaGraphAddEmptyNode(&idle, graph, &copy_ab, 1));
  void* sum_args[] = {&a, &b, &out};
  cudaGraphNode_t sum = AddKernel(graph, {scale, idle}, reinterpret_cast<void*>(Sum), sum_args);
  cudaMemcpy3DParms to_host{};
  to_host.srcPtr = make_cudaPitchedPtr(out, kCount * sizeof(int), kCount, 1);
  to_host.dstPtr = make_cudaPitchedPtr(host, kCount * sizeof(int), kCount, 1);
  to_host.extent = make_cudaExtent(kCount * sizeof(int), 1, 1);
  to_host.kind = cudaMemcpyDeviceToHost;
  cudaGraphNode_t copy_out = nullptr;
  CHECK_CUDA(cudaGraphAddMemcpyNode(&copy_out, graph, &sum, 1, &to_host));
  cudaHostNodeParams count_call{CountCall, &host_counter};
  cudaGraphNode_t host_node = nullptr;
  CHECK_CUDA(cudaGraphAddHostNode(&host_node, graph, &copy_out, 1, &count_call));
  EXPECT(NodeCount(graph) == 8);

  // Queries.
  size_t roots = 0;
  CHECK_CUDA(cudaGraphGetRootNodes(graph, nullptr, &roots));
  EXPECT(roots == 1);
  size_t edges = 0;
  CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  EXPECT(edges == 8);
  cudaGraphNode_t deps[4] = {};
  size_t dep_count = 4;
  CHECK_CUDA(cudaGraphNodeGetDependencies(sum, deps, nullptr, &dep_count));
  EXPECT(dep_count == 2 && deps[0] == scale && deps[1] == idle && deps[2] == nullptr);
  cudaGraphNodeType type;
  CHECK_CUDA(cudaGraphNodeGetType(copy_ab, &type));
  EXPECT(type == cudaGraphNodeTypeMemcpy);
  CHECK_CUDA(cudaGraphNodeGetType(host_node, &type));
  EXPECT(type == cudaGraphNodeTypeHost);
  cudaKernelNodeParams got{};
  CHECK_CUDA(cudaGraphKernelNodeGetParams(add, &got));
  EXPECT(got.func == reinterpret_cast<void*>(AddTo) && got.gridDim.x == kBlocks &&
         *static_cast<int*>(got.kernelParams[1]) == 5);
  five = 6;  // the node copied the arguments when it was added
  CHECK_CUDA(cudaGraphKernelNodeGetParams(add, &got));
  EXPECT(*static_cast<int*>(got.kernelParams[1]) == 5);

  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphUpload(exec, stream));
  for (int launch = 0; launch < 2; ++launch) {
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 5 * 3 + 5);
    EXPECT(host_counter == launch + 1);
  }
  // A changed argument in the instantiation only; the graph keeps its own.
  int seven = 7;
  void* seven_args[] = {&a, &seven};
  cudaKernelNodeParams changed = got;
  changed.kernelParams = seven_args;
  CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, add, &changed));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 7 * 3 + 7);
  CHECK_CUDA(cudaGraphKernelNodeGetParams(add, &got));
  EXPECT(*static_cast<int*>(got.kernelParams[1]) == 5);

  // Update from a clone whose scale is 4: same topology, new parameters.
  cudaGraph_t clone = nullptr;
  CHECK_CUDA(cudaGraphClone(&clone, graph));
  cudaGraphNode_t cloned_scale = nullptr;
  CHECK_CUDA(cudaGraphNodeFindInClone(&cloned_scale, scale, clone));
  int four = 4;
  void* four_args[] = {&a, &four};
  cudaKernelNodeParams scale_params{};
  CHECK_CUDA(cudaGraphKernelNodeGetParams(cloned_scale, &scale_params));
  scale_params.kernelParams = four_args;
  CHECK_CUDA(cudaGraphKernelNodeSetParams(cloned_scale, &scale_params));
  cudaGraphExecUpdateResultInfo info{};
  CHECK_CUDA(cudaGraphExecUpdate(exec, clone, &info));
  EXPECT(info.result == cudaGraphExecUpdateSuccess);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 5 * 4 + 5);
  // Another topology is refused and changes nothing.
  cudaGraphNode_t extra = nullptr;
  CHECK_CUDA(cudaGraphAddEmptyNode(&extra, clone, nullptr, 0));
  EXPECT(cudaGraphExecUpdate(exec, clone, &info) == cudaErrorGraphExecUpdateFailure);
  EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT(cudaGetLastError() == cudaErrorGraphExecUpdateFailure);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 5 * 4 + 5);
  EXPECT(host_counter == 5);

  // Edges can be added and removed; a cycle cannot be instantiated.
  cudaGraphNode_t cloned_host = nullptr, cloned_zero = nullptr;
  CHECK_CUDA(cudaGraphNodeFindInClone(&cloned_host, host_node, clone));
  CHECK_CUDA(cudaGraphNodeFindInClone(&cloned_zero, zero, clone));
  EXPECT(cudaGraphAddDependencies(clone, &zero, &cloned_zero, nullptr, 1) ==
         cudaErrorInvalidValue);  // a node of another graph
  CHECK_CUDA(cudaGraphAddDependencies(clone, &extra, &cloned_zero, nullptr, 1));
  CHECK_CUDA(cudaGraphAddDependencies(clone, &cloned_host, &extra, nullptr, 1));
  cudaGraphExec_t cyclic = nullptr;
  EXPECT(cudaGraphInstantiate(&cyclic, clone, 0) == cudaErrorInvalidValue);
  CHECK_CUDA(cudaGraphRemoveDependencies(clone, &cloned_host, &extra, nullptr, 1));
  CHECK_CUDA(cudaGraphDestroyNode(extra));
  EXPECT(NodeCount(clone) == 8);
  CHECK_CUDA(cudaGraphInstantiate(&cyclic, clone, 0));
  CHECK_CUDA(cudaGraphExecDestroy(cyclic));

  CHECK_CUDA(cudaGraphExecDestroy(exec));
  EXPECT(cudaGraphExecDestroy(exec) == cudaErrorInvalidValue);
  CHECK_CUDA(cudaGraphDestroy(clone));
  CHECK_CUDA(cudaGraphDestroy(graph));
  EXPECT(cudaGraphDestroy(graph) == cudaErrorInvalidValue);
  EXPECT(cudaGraphAddEmptyNode(&extra, graph, nullptr, 0) == cudaErrorInvalidValue);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(out));
  std::printf("explicit graph: ok\n");
}

// Captured on two streams joined by events: s1 copies in and adds, s2 scales a copy, s1 sums.
void CapturedFork(cudaStream_t s1, cudaStream_t s2) {
  int *a = nullptr, *b = nullptr, *out = nullptr, *host = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kCount * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, kCount * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kCount * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&host, kCount * sizeof(int)));
  cudaEvent_t forked, joined;
  CHECK_CUDA(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));

  cudaStreamCaptureStatus status;
  CHECK_CUDA(cudaStreamIsCapturing(s1, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  EXPECT(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal) == cudaErrorIllegalState);
  EXPECT(cudaGetLastError() == cudaErrorIllegalState);
  CHECK_CUDA(cudaStreamIsCapturing(s1, &status));
  EXPECT(status == cudaStreamCaptureStatusActive);
  CHECK_CUDA(cudaMemcpyAsync(a, host, kCount * sizeof(int), cudaMemcpyHostToDevice, s1));
  AddTo<<<kBlocks, kThreads, 0, s1>>>(a, 10);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(forked, s1));
  CHECK_CUDA(cudaStreamIsCapturing(s2, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);
  CHECK_CUDA(cudaStreamWaitEvent(s2, forked, 0));  // s2 joins the capture
  CHECK_CUDA(cudaStreamIsCapturing(s2, &status));
  EXPECT(status == cudaStreamCaptureStatusActive);
  CHECK_CUDA(cudaMemcpyAsync(b, a, kCount * sizeof(int), cudaMemcpyDeviceToDevice, s2));
  Scale<<<kBlocks, kThreads, 0, s2>>>(b, 2);
  CHECK_CUDA(cudaEventRecord(joined, s2));
  CHECK_CUDA(cudaStreamWaitEvent(s1, joined, 0));
  unsigned long long id1 = 0, id2 = 0;
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t* frontier = nullptr;
  size_t frontier_size = 0;
  CHECK_CUDA(
      cudaStreamGetCaptureInfo(s1, &status, &id1, &capturing, &frontier, nullptr, &frontier_size));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s2, &status, &id2, nullptr, nullptr, nullptr, nullptr));
  EXPECT(id1 == id2 && capturing != nullptr && frontier_size == 2);
  EXPECT(NodeCount(capturing) == 4);
  Sum<<<kBlocks, kThreads, 0, s1>>>(a, b, out);
  CHECK_CUDA(cudaMemcpyAsync(host, out, kCount * sizeof(int), cudaMemcpyDeviceToHost, s1));
  cudaGraph_t graph = nullptr;
  EXPECT(cudaStreamEndCapture(s2, &graph) == cudaErrorStreamCaptureUnmatched);
  CHECK_CUDA(cudaStreamEndCapture(s1, &graph));
  CHECK_CUDA(cudaStreamIsCapturing(s2, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);
  EXPECT(graph == capturing && NodeCount(graph) == 6);

  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  unsigned long long flags = 0;
  CHECK_CUDA(cudaGraphExecGetFlags(exec, &flags));
  EXPECT(flags == cudaGraphInstantiateFlagAutoFreeOnLaunch);
  for (int launch = 0; launch < 3; ++launch) {
    for (int i = 0; i < kCount; ++i) host[i] = i * (launch + 1);
    CHECK_CUDA(cudaGraphLaunch(exec, launch == 1 ? s2 : s1));  // any stream
    CHECK_CUDA(cudaStreamSynchronize(launch == 1 ? s2 : s1));
    for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 3 * (i * (launch + 1) + 10));
  }
  // Nothing ran while capturing: the first result came from the first launch.
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaEventDestroy(forked));
  CHECK_CUDA(cudaEventDestroy(joined));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFreeHost(host));
  std::printf("captured fork and join: ok\n");
}

// A helper stream that joined a capture through an event and whose work was joined back may be
// destroyed before the capture ends (NVIDIA's samples do): the capture goes on and its graph
// holds the helper's work. One whose work was not joined back invalidates the capture.
void DestroyJoinedStream(cudaStream_t origin) {
  int* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, kCount * sizeof(int)));
  CHECK_CUDA(cudaMemset(data, 0, kCount * sizeof(int)));
  cudaEvent_t forked, joined;
  CHECK_CUDA(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  cudaStream_t helper;
  CHECK_CUDA(cudaStreamCreate(&helper));
  CHECK_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaEventRecord(forked, origin));
  CHECK_CUDA(cudaStreamWaitEvent(helper, forked, 0));
  AddTo<<<kBlocks, kThreads, 0, helper>>>(data, 5);
  CHECK_CUDA(cudaEventRecord(joined, helper));
  CHECK_CUDA(cudaStreamWaitEvent(origin, joined, 0));
  CHECK_CUDA(cudaStreamDestroy(helper));
  Scale<<<kBlocks, kThreads, 0, origin>>>(data, 3);
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(origin, &graph));
  EXPECT(NodeCount(graph) == 2);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, origin));
  std::vector<int> host(kCount);
  CHECK_CUDA(cudaMemcpy(host.data(), data, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  for (int value : host) EXPECT(value == 15);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));

  // Not joined back: the helper's kernel would be lost, so the capture is invalidated.
  CHECK_CUDA(cudaStreamCreate(&helper));
  CHECK_CUDA(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaEventRecord(forked, origin));
  CHECK_CUDA(cudaStreamWaitEvent(helper, forked, 0));
  AddTo<<<kBlocks, kThreads, 0, helper>>>(data, 5);
  CHECK_CUDA(cudaStreamDestroy(helper));
  EXPECT(cudaStreamEndCapture(origin, &graph) == cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  CHECK_CUDA(cudaEventDestroy(forked));
  CHECK_CUDA(cudaEventDestroy(joined));
  CHECK_CUDA(cudaFree(data));
  std::printf("destroyed joined streams: ok\n");
}

// What CUDA refuses while a stream captures, and the state it leaves.
void CaptureErrors(cudaStream_t s1, cudaStream_t s2, cudaStream_t non_blocking) {
  cudaGraph_t graph = nullptr;
  int* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, kCount * sizeof(int)));

  // Synchronising a capturing stream invalidates its capture.
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  AddTo<<<kBlocks, kThreads, 0, s1>>>(data, 1);
  EXPECT(cudaStreamSynchronize(s1) == cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus status;
  CHECK_CUDA(cudaStreamIsCapturing(s1, &status));
  EXPECT(status == cudaStreamCaptureStatusInvalidated);
  AddTo<<<kBlocks, kThreads, 0, s1>>>(data, 1);
  EXPECT(cudaGetLastError() == cudaErrorStreamCaptureInvalidated);
  EXPECT(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureInvalidated);
  EXPECT(graph == nullptr);

  // A potentially unsafe call (cudaMalloc) in global mode is refused; relaxed allows it.
  void* more = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  EXPECT(cudaMalloc(&more, 256) == cudaErrorStreamCaptureUnsupported);
  EXPECT(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
  CHECK_CUDA(cudaMalloc(&more, 256));
  CHECK_CUDA(cudaFree(more));
  CHECK_CUDA(cudaStreamEndCapture(s1, &graph));
  EXPECT(NodeCount(graph) == 0);
  CHECK_CUDA(cudaGraphDestroy(graph));
  // The thread's mode decides: relaxed lets this thread allocate during its own global capture.
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeGlobal);
  CHECK_CUDA(cudaMalloc(&more, 256));
  CHECK_CUDA(cudaFree(more));
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  EXPECT(mode == cudaStreamCaptureModeRelaxed);
  // Another thread is not bound by this thread's thread-local capture.
  std::thread other([&] {
    void* pointer = nullptr;
    CHECK_CUDA(cudaMalloc(&pointer, 256));
    CHECK_CUDA(cudaFree(pointer));
  });
  other.join();
  CHECK_CUDA(cudaStreamEndCapture(s1, &graph));
  CHECK_CUDA(cudaGraphDestroy(graph));
  // ... but by a global one.
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  std::thread refused([&] {
    void* pointer = nullptr;
    EXPECT(cudaMalloc(&pointer, 256) == cudaErrorStreamCaptureUnsupported);
  });
  refused.join();
  CHECK_CUDA(cudaStreamEndCapture(s1, &graph));
  CHECK_CUDA(cudaGraphDestroy(graph));

  // The legacy stream synchronises with blocking streams: using it invalidates their capture,
  // but not that of a non-blocking stream.
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
  AddTo<<<kBlocks, kThreads>>>(data, 1);
  EXPECT(cudaGetLastError() == cudaErrorStreamCaptureImplicit);
  EXPECT(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK_CUDA(cudaStreamBeginCapture(non_blocking, cudaStreamCaptureModeRelaxed));
  CHECK_CUDA(cudaMemset(data, 0, kCount * sizeof(int)));
  AddTo<<<kBlocks, kThreads, 0, non_blocking>>>(data, 2);
  CHECK_CUDA(cudaStreamEndCapture(non_blocking, &graph));
  EXPECT(NodeCount(graph) == 1);
  CHECK_CUDA(cudaGraphDestroy(graph));

  // A stream that joined and did not join back.
  cudaEvent_t event;
  CHECK_CUDA(cudaEventCreate(&event));
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaEventRecord(event, s1));
  CHECK_CUDA(cudaStreamWaitEvent(s2, event, 0));
  AddTo<<<kBlocks, kThreads, 0, s2>>>(data, 1);
  EXPECT(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureUnjoined);
  EXPECT(graph == nullptr);
  CHECK_CUDA(cudaStreamIsCapturing(s2, &status));
  EXPECT(status == cudaStreamCaptureStatusNone);
  // Waiting on an event recorded outside the capture.
  CHECK_CUDA(cudaEventRecord(event, s2));
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  EXPECT(cudaStreamWaitEvent(s1, event, 0) == cudaErrorStreamCaptureIsolation);
  EXPECT(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK_CUDA(cudaEventDestroy(event));

  // Nothing captured ran: data holds only the memset and nothing else touched it since.
  static int host[kCount];
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host, data, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 0);
  CHECK_CUDA(cudaFree(data));
  std::printf("capture errors: ok\n");
}

// A graph launched into a capturing stream becomes a child graph node; event record and wait
// nodes order two graphs on two streams; memory nodes allocate and free inside a graph.
void ChildGraphsEventsAndMemory(cudaStream_t s1, cudaStream_t s2) {
  int* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, kCount * sizeof(int)));
  CHECK_CUDA(cudaMemset(data, 0, kCount * sizeof(int)));
  CHECK_CUDA(cudaDeviceSynchronize());

  // inner: +1; outer: inner as a child node, then x2; captured: outer launched twice.
  cudaGraph_t inner = nullptr;
  CHECK_CUDA(cudaGraphCreate(&inner, 0));
  int one = 1;
  void* add_args[] = {&data, &one};
  AddKernel(inner, {}, reinterpret_cast<void*>(AddTo), add_args);
  cudaGraph_t outer = nullptr;
  CHECK_CUDA(cudaGraphCreate(&outer, 0));
  cudaGraphNode_t child = nullptr;
  CHECK_CUDA(cudaGraphAddChildGraphNode(&child, outer, nullptr, 0, inner));
  CHECK_CUDA(cudaGraphDestroy(inner));  // the node has its own copy
  cudaGraph_t embedded = nullptr;
  CHECK_CUDA(cudaGraphChildGraphNodeGetGraph(child, &embedded));
  EXPECT(NodeCount(embedded) == 1);
  EXPECT(cudaGraphDestroy(embedded) == cudaErrorInvalidValue);
  int two = 2;
  void* scale_args[] = {&data, &two};
  AddKernel(outer, {child}, reinterpret_cast<void*>(Scale), scale_args);
  cudaGraphExec_t outer_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&outer_exec, outer, 0));
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaGraphLaunch(outer_exec, s1));
  CHECK_CUDA(cudaGraphLaunch(outer_exec, s1));
  cudaGraph_t twice = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s1, &twice));
  EXPECT(NodeCount(twice) == 2);
  cudaGraphExec_t twice_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&twice_exec, twice, 0));
  CHECK_CUDA(cudaGraphLaunch(twice_exec, s1));  // ((0 + 1) * 2 + 1) * 2 = 6
  static int host[kCount];
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 6);

  // Graph A on s1 records an event node after +1; graph B on s2 waits for it, then x2.
  cudaEvent_t event;
  CHECK_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaGraph_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaGraphCreate(&a, 0));
  CHECK_CUDA(cudaGraphCreate(&b, 0));
  cudaGraphNode_t add = AddKernel(a, {}, reinterpret_cast<void*>(AddTo), add_args);
  cudaGraphNode_t record = nullptr;
  CHECK_CUDA(cudaGraphAddEventRecordNode(&record, a, &add, 1, event));
  cudaGraphNode_t wait = nullptr;
  CHECK_CUDA(cudaGraphAddEventWaitNode(&wait, b, nullptr, 0, event));
  AddKernel(b, {wait}, reinterpret_cast<void*>(Scale), scale_args);
  cudaEvent_t got = nullptr;
  CHECK_CUDA(cudaGraphEventWaitNodeGetEvent(wait, &got));
  EXPECT(got == event);
  cudaGraphExec_t a_exec = nullptr, b_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&a_exec, a, 0));
  CHECK_CUDA(cudaGraphInstantiate(&b_exec, b, 0));
  CHECK_CUDA(cudaGraphLaunch(a_exec, s1));
  CHECK_CUDA(cudaGraphLaunch(b_exec, s2));
  CHECK_CUDA(cudaStreamSynchronize(s2));
  CHECK_CUDA(cudaMemcpy(host, data, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == (6 + 1) * 2);

  // Memory nodes: a scratch buffer allocated in the graph, filled, summed into data, freed.
  cudaGraph_t memory = nullptr;
  CHECK_CUDA(cudaGraphCreate(&memory, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = 0;
  alloc.bytesize = kCount * sizeof(int);
  cudaGraphNode_t alloc_node = nullptr;
  CHECK_CUDA(cudaGraphAddMemAllocNode(&alloc_node, memory, nullptr, 0, &alloc));
  EXPECT(alloc.dptr != nullptr);
  int* scratch = static_cast<int*>(alloc.dptr);
  cudaMemsetParams fill{};
  fill.dst = scratch;
  fill.value = 3;
  fill.elementSize = 4;
  fill.width = kCount;
  fill.height = 1;
  cudaGraphNode_t fill_node = nullptr;
  CHECK_CUDA(cudaGraphAddMemsetNode(&fill_node, memory, &alloc_node, 1, &fill));
  void* sum_args[] = {&data, &scratch, &data};
  cudaGraphNode_t sum = AddKernel(memory, {fill_node}, reinterpret_cast<void*>(Sum), sum_args);
  cudaGraphNode_t free_node = nullptr;
  CHECK_CUDA(cudaGraphAddMemFreeNode(&free_node, memory, &sum, 1, scratch));
  void* freed = nullptr;
  CHECK_CUDA(cudaGraphMemFreeNodeGetParams(free_node, &freed));
  EXPECT(freed == scratch);
  EXPECT(cudaGraphAddMemFreeNode(&free_node, memory, &sum, 1, data) == cudaErrorInvalidValue);
  cudaGraphExec_t memory_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&memory_exec, memory, 0));
  CHECK_CUDA(cudaGraphLaunch(memory_exec, s1));
  CHECK_CUDA(cudaGraphLaunch(memory_exec, s1));
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, s1));
  CHECK_CUDA(cudaStreamSynchronize(s1));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 14 + 3 + 3);

  // Captured stream-ordered allocation: cudaMallocAsync/cudaFreeAsync become memory nodes.
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  int* captured = nullptr;
  CHECK_CUDA(cudaMallocAsync(&captured, kCount * sizeof(int), s1));
  CHECK_CUDA(cudaMemsetAsync(captured, 0, kCount * sizeof(int), s1));
  AddTo<<<kBlocks, kThreads, 0, s1>>>(captured, 4);
  Sum<<<kBlocks, kThreads, 0, s1>>>(data, captured, data);
  CHECK_CUDA(cudaFreeAsync(captured, s1));
  cudaGraph_t allocating = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s1, &allocating));
  EXPECT(NodeCount(allocating) == 5);
  cudaGraphNode_t nodes[5];
  size_t count = 5;
  CHECK_CUDA(cudaGraphGetNodes(allocating, nodes, &count));
  cudaGraphNodeType type;
  CHECK_CUDA(cudaGraphNodeGetType(nodes[0], &type));
  EXPECT(type == cudaGraphNodeTypeMemAlloc);
  CHECK_CUDA(cudaGraphNodeGetType(nodes[4], &type));
  EXPECT(type == cudaGraphNodeTypeMemFree);
  cudaGraphExec_t allocating_exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&allocating_exec, allocating, 0));
  for (int launch = 0; launch < 2; ++launch) CHECK_CUDA(cudaGraphLaunch(allocating_exec, s2));
  CHECK_CUDA(cudaStreamSynchronize(s2));
  CHECK_CUDA(cudaMemcpy(host, data, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 20 + 4 + 4);

  for (cudaGraphExec_t exec :
       {outer_exec, twice_exec, a_exec, b_exec, memory_exec, allocating_exec}) {
    CHECK_CUDA(cudaGraphExecDestroy(exec));
  }
  for (cudaGraph_t graph : {outer, twice, a, b, memory, allocating}) {
    CHECK_CUDA(cudaGraphDestroy(graph));
  }
  CHECK_CUDA(cudaDeviceGraphMemTrim(0));
  CHECK_CUDA(cudaEventDestroy(event));
  CHECK_CUDA(cudaFree(data));
  std::printf("child graphs, event nodes, memory nodes: ok\n");
}

// cudaGraphAddNode and the generic setters, a capture into an existing graph, and the graph
// written as DOT.
void GenericNodesAndCaptureToGraph(cudaStream_t stream) {
  int* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, kCount * sizeof(int)));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphNodeParams memset{};
  memset.type = cudaGraphNodeTypeMemset;
  memset.memset.dst = data;
  memset.memset.value = 2;
  memset.memset.elementSize = 4;
  memset.memset.width = kCount;
  memset.memset.height = 1;
  cudaGraphNode_t fill = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&fill, graph, nullptr, nullptr, 0, &memset));
  int ten = 10;
  void* args[] = {&data, &ten};
  cudaGraphNodeParams kernel{};
  kernel.type = cudaGraphNodeTypeKernel;
  kernel.kernel.func = reinterpret_cast<void*>(Scale);
  kernel.kernel.gridDim = dim3(kBlocks);
  kernel.kernel.blockDim = dim3(kThreads);
  kernel.kernel.kernelParams = args;
  cudaGraphNode_t scale = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&scale, graph, &fill, nullptr, 1, &kernel));
  cudaGraphNodeParams conditional{};
  conditional.type = cudaGraphNodeTypeConditional;
  cudaGraphNode_t refused = nullptr;
  EXPECT(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &conditional) ==
         cudaErrorNotSupported);
  EXPECT(cudaGraphNodeSetParams(fill, &kernel) == cudaErrorInvalidValue);  // another type

  // Captured after the kernel node: +1 twice.
  CHECK_CUDA(cudaStreamBeginCaptureToGraph(stream, graph, &scale, nullptr, 1,
                                           cudaStreamCaptureModeGlobal));
  AddTo<<<kBlocks, kThreads, 0, stream>>>(data, 1);
  AddTo<<<kBlocks, kThreads, 0, stream>>>(data, 1);
  cudaGraph_t same = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(stream, &same));
  EXPECT(same == graph && NodeCount(graph) == 4);
  cudaGraphNode_t after_scale[2] = {};
  size_t count = 2;
  CHECK_CUDA(cudaGraphNodeGetDependentNodes(scale, after_scale, nullptr, &count));
  EXPECT(count == 1);

  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  static int host[kCount];
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 2 * 10 + 2);
  // The instantiation's memset value changes alone; then the graph's scale, taken by update.
  memset.memset.value = 3;
  CHECK_CUDA(cudaGraphExecNodeSetParams(exec, fill, &memset));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 3 * 10 + 2);
  int hundred = 100;
  args[1] = &hundred;
  CHECK_CUDA(cudaGraphNodeSetParams(scale, &kernel));
  cudaGraphExecUpdateResultInfo info{};
  CHECK_CUDA(cudaGraphExecUpdate(exec, graph, &info));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == 2 * 100 + 2);

  char path[] = "/tmp/tally-graph-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT(fd >= 0);
  close(fd);
  CHECK_CUDA(cudaGraphDebugDotPrint(graph, path, cudaGraphDebugDotFlagsVerbose));
  std::ifstream dot(path);
  const std::string text((std::istreambuf_iterator<char>(dot)), std::istreambuf_iterator<char>());
  unlink(path);
  EXPECT(text.find("digraph") != std::string::npos && text.find("Scale") != std::string::npos &&
         text.find("memset") != std::string::npos && text.find("->") != std::string::npos);

  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(data));
  std::printf("generic nodes, capture into a graph, DOT: ok\n");
}

}  // namespace

int main() {
  cudaStream_t s1, s2, non_blocking;
  CHECK_CUDA(cudaStreamCreate(&s1));
  CHECK_CUDA(cudaStreamCreate(&s2));
  CHECK_CUDA(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  ExplicitGraph(s1);
  CapturedFork(s1, s2);
  DestroyJoinedStream(s1);
  CaptureErrors(s1, s2, non_blocking);
  ChildGraphsEventsAndMemory(s1, s2);
  GenericNodesAndCaptureToGraph(s1);
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaStreamDestroy(non_blocking));
  std::printf("graphs: all passed\n");
  return 0;
}
