// CUDA graphs through Tally's driver API (a PTX module's kernel): a graph built with cuGraph*
// calls (memset, kernel, host, empty and child graph nodes, event record and wait nodes, edges
// added afterwards), instantiated, launched, its kernel node changed in the instantiation and by
// cuGraphExecUpdate; a capture with cuStreamBeginCapture; cuGetProcAddress answering each call.
#include <cuda.h>

#include <cstdio>
#include <vector>

#include "add_one_ptx.h"
#include "driver_setup.h"

namespace {

constexpr unsigned kCount = 512;

void CountCall(void* data) { *static_cast<int*>(data) += 1; }

CUgraphNode AddOne(CUgraph graph, std::vector<CUgraphNode> after, CUfunction add_one,
                   CUdeviceptr* data, unsigned* count) {
  void* args[] = {data, count};
  CUDA_KERNEL_NODE_PARAMS params{};
  params.func = add_one;
  params.gridDimX = kCount / 128;
  params.gridDimY = params.gridDimZ = 1;
  params.blockDimX = 128;
  params.blockDimY = params.blockDimZ = 1;
  params.kernelParams = args;
  CUgraphNode node = nullptr;
  CHECK_CU(cuGraphAddKernelNode(&node, graph, after.data(), after.size(), &params));
  return node;
}

void Expect(CUdeviceptr data, unsigned value) {
  static unsigned host[kCount];
  CHECK_CU(cuMemcpyDtoH(host, data, sizeof(host)));
  for (unsigned i = 0; i < kCount; ++i) {
    if (host[i] != value) {
      std::fprintf(stderr, "element %u is %u, expected %u\n", i, host[i], value);
      std::exit(1);
    }
  }
}

}  // namespace

int main() {
  UsePrimaryContext();
  ExpectProcAddress("cuGraphCreate", 12000, "cuGraphCreate");
  ExpectProcAddress("cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2");
  ExpectProcAddress("cuGraphLaunch", 12000, "cuGraphLaunch");
  ExpectProcAddress("cuStreamBeginCapture", 12000, "cuStreamBeginCapture_v2");
  ExpectProcAddress("cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3");
  ExpectProcAddress("cuGraphExecUpdate", 12000, "cuGraphExecUpdate_v2");
  CUmodule module;
  CUfunction add_one = LoadFunction(&module, kAddOnePtx, "add_one");
  CUdeviceptr data = 0;
  CHECK_CU(cuMemAlloc(&data, kCount * sizeof(unsigned)));
  unsigned count = kCount;
  CUstream stream, other;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));

  // memset 40 -> +1 -> (empty | child: +1 +1) -> host; the edge empty -> host added afterwards.
  CUgraph graph = nullptr, child = nullptr;
  CHECK_CU(cuGraphCreate(&graph, 0));
  CHECK_CU(cuGraphCreate(&child, 0));
  CUgraphNode first = AddOne(child, {}, add_one, &data, &count);
  AddOne(child, {first}, add_one, &data, &count);
  CUDA_MEMSET_NODE_PARAMS memset{};
  memset.dst = data;
  memset.value = 40;
  memset.elementSize = 4;
  memset.width = kCount;
  memset.height = 1;
  CUcontext context = nullptr;
  CHECK_CU(cuCtxGetCurrent(&context));
  CUgraphNode zero = nullptr;
  CHECK_CU(cuGraphAddMemsetNode(&zero, graph, nullptr, 0, &memset, context));
  CUgraphNode add = AddOne(graph, {zero}, add_one, &data, &count);
  CUgraphNode empty = nullptr, nested = nullptr, host = nullptr;
  CHECK_CU(cuGraphAddEmptyNode(&empty, graph, &add, 1));
  CHECK_CU(cuGraphAddChildGraphNode(&nested, graph, &add, 1, child));
  int calls = 0;
  CUDA_HOST_NODE_PARAMS host_params{CountCall, &calls};
  CHECK_CU(cuGraphAddHostNode(&host, graph, &nested, 1, &host_params));
  CHECK_CU(cuGraphAddDependencies(graph, &empty, &host, nullptr, 1));
  size_t nodes = 0;
  CHECK_CU(cuGraphGetNodes(graph, nullptr, &nodes));
  if (nodes != 5) return 1;
  CUgraphNodeType type;
  CHECK_CU(cuGraphNodeGetType(nested, &type));
  if (type != CU_GRAPH_NODE_TYPE_GRAPH) return 1;

  CUgraphExec exec = nullptr;
  CHECK_CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    CHECK_CU(cuGraphLaunch(exec, stream));
    CHECK_CU(cuStreamSynchronize(stream));
    Expect(data, 43);
  }
  if (calls != 2) return 1;

  // The instantiation's +1 becomes a launch over half the elements... then back by update.
  CUDA_KERNEL_NODE_PARAMS params{};
  CHECK_CU(cuGraphKernelNodeGetParams(add, &params));
  if (params.func != add_one || params.gridDimX != kCount / 128 ||
      *static_cast<unsigned*>(params.kernelParams[1]) != kCount) {
    return 1;
  }
  unsigned half = kCount / 2;
  void* half_args[] = {&data, &half};
  params.kernelParams = half_args;
  CHECK_CU(cuGraphExecKernelNodeSetParams(exec, add, &params));
  CHECK_CU(cuGraphLaunch(exec, stream));
  CHECK_CU(cuStreamSynchronize(stream));
  static unsigned values[kCount];
  CHECK_CU(cuMemcpyDtoH(values, data, sizeof(values)));
  for (unsigned i = 0; i < kCount; ++i) {
    if (values[i] != (i < half ? 43u : 42u)) return 1;
  }
  CUgraphExecUpdateResultInfo info{};
  CHECK_CU(cuGraphExecUpdate(exec, graph, &info));
  if (info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return 1;
  CHECK_CU(cuGraphLaunch(exec, stream));
  CHECK_CU(cuStreamSynchronize(stream));
  Expect(data, 43);

  // Event nodes order a graph on `other` after one on `stream`.
  CUevent event;
  CHECK_CU(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  CUgraph recorder = nullptr, waiter = nullptr;
  CHECK_CU(cuGraphCreate(&recorder, 0));
  CHECK_CU(cuGraphCreate(&waiter, 0));
  CUgraphNode recorded = AddOne(recorder, {}, add_one, &data, &count);
  CUgraphNode record = nullptr, wait = nullptr;
  CHECK_CU(cuGraphAddEventRecordNode(&record, recorder, &recorded, 1, event));
  CHECK_CU(cuGraphAddEventWaitNode(&wait, waiter, nullptr, 0, event));
  AddOne(waiter, {wait}, add_one, &data, &count);
  CUgraphExec recorder_exec = nullptr, waiter_exec = nullptr;
  CHECK_CU(cuGraphInstantiateWithFlags(&recorder_exec, recorder, 0));
  CHECK_CU(cuGraphInstantiateWithFlags(&waiter_exec, waiter, 0));
  CHECK_CU(cuGraphLaunch(recorder_exec, stream));
  CHECK_CU(cuGraphLaunch(waiter_exec, other));
  CHECK_CU(cuStreamSynchronize(other));
  Expect(data, 45);

  // Captured: three +1 launches on a stream.
  CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUstreamCaptureStatus status;
  CHECK_CU(cuStreamIsCapturing(stream, &status));
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return 1;
  void* args[] = {&data, &count};
  for (int i = 0; i < 3; ++i) {
    CHECK_CU(cuLaunchKernel(add_one, kCount / 128, 1, 1, 128, 1, 1, 0, stream, args, nullptr));
  }
  cuuint64_t id = 0;
  CUgraph capturing = nullptr;
  const CUgraphNode* frontier = nullptr;
  size_t frontier_size = 0;
  CHECK_CU(
      cuStreamGetCaptureInfo(stream, &status, &id, &capturing, &frontier, nullptr, &frontier_size));
  if (id == 0 || frontier_size != 1) return 1;
  CUgraph captured = nullptr;
  CHECK_CU(cuStreamEndCapture(stream, &captured));
  if (captured != capturing) return 1;
  CHECK_CU(cuGraphGetNodes(captured, nullptr, &nodes));
  if (nodes != 3) return 1;
  Expect(data, 45);  // nothing ran while capturing
  CUgraphExec captured_exec = nullptr;
  CHECK_CU(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
  CHECK_CU(cuGraphLaunch(captured_exec, stream));
  CHECK_CU(cuStreamSynchronize(stream));
  Expect(data, 48);

  for (CUgraphExec e : {exec, recorder_exec, waiter_exec, captured_exec}) {
    CHECK_CU(cuGraphExecDestroy(e));
  }
  for (CUgraph g : {graph, child, recorder, waiter, captured}) CHECK_CU(cuGraphDestroy(g));
  if (cuGraphDestroy(graph) != CUDA_ERROR_INVALID_VALUE) return 1;
  CHECK_CU(cuEventDestroy(event));
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuStreamDestroy(other));
  CHECK_CU(cuMemFree(data));
  CHECK_CU(cuModuleUnload(module));
  std::printf("driver graphs: all passed\n");
  return 0;
}
