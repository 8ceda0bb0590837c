// The driver API's stream queries, host functions and context limits as programs linked with
// -lcuda use them: cuStreamGetPriority/Flags/Id/Ctx(_v2) against what each stream was created
// with (priorities clamped to the device's range, the context current at creation), host
// functions and stream callbacks ordered between kernels on a stream (a kernel writes mapped
// memory that the host function reads and overwrites, and the next kernel must see the
// overwrite), the errors for a destroyed or forged stream returned by the call itself in both
// APIs (nothing surfaces at the next synchronisation), and cuCtxSetLimit/GetLimit round trips
// that the runtime API sees too. Also that cuGetProcAddress answers each of these names.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

namespace {

constexpr unsigned kN = 256;
CUfunction add_one = nullptr;

void AddOne(CUstream stream, CUdeviceptr data) {
  unsigned n = kN;
  void* params[] = {&data, &n};
  CHECK_CU(cuLaunchKernel(add_one, (kN + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params, nullptr));
}

void TestEntryPoints() {
  ExpectProcAddress("cuStreamGetPriority", 13000, "cuStreamGetPriority");
  ExpectProcAddress("cuStreamGetFlags", 13000, "cuStreamGetFlags");
  ExpectProcAddress("cuStreamGetId", 13000, "cuStreamGetId");
  ExpectProcAddress("cuStreamGetCtx", 13000, "cuStreamGetCtx_v2");
  ExpectProcAddress("cuStreamGetCtx", 12000, "cuStreamGetCtx");
  ExpectProcAddress("cuLaunchHostFunc", 13000, "cuLaunchHostFunc");
  ExpectProcAddress("cuStreamAddCallback", 13000, "cuStreamAddCallback");
  ExpectProcAddress("cuCtxSetLimit", 13000, "cuCtxSetLimit");
  ExpectProcAddress("cuCtxGetLimit", 13000, "cuCtxGetLimit");
  // Asked for with an older CUDA version than introduced it: known, but not found.
  void* function = nullptr;
  CUdriverProcAddressQueryResult status;
  EXPECT(cuGetProcAddress("cuStreamGetId", &function, 11080, CU_GET_PROC_ADDRESS_DEFAULT,
                          &status) == CUDA_ERROR_NOT_FOUND);
  EXPECT(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && function == nullptr);
}

void TestStreamQueries() {
  int least = 0, greatest = 0;
  CHECK_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  EXPECT(greatest <= least);

  CUstream plain, urgent, lazy;
  CHECK_CU(cuStreamCreate(&plain, CU_STREAM_DEFAULT));
  CHECK_CU(cuStreamCreateWithPriority(&urgent, CU_STREAM_NON_BLOCKING, greatest - 10));
  CHECK_CU(cuStreamCreateWithPriority(&lazy, CU_STREAM_DEFAULT, least + 10));
  unsigned flags = 99;
  int priority = 99;
  CHECK_CU(cuStreamGetFlags(plain, &flags));
  CHECK_CU(cuStreamGetPriority(plain, &priority));
  EXPECT(flags == CU_STREAM_DEFAULT && priority == 0);
  CHECK_CU(cuStreamGetFlags(urgent, &flags));
  CHECK_CU(cuStreamGetPriority(urgent, &priority));
  EXPECT(flags == CU_STREAM_NON_BLOCKING && priority == greatest);  // clamped
  CHECK_CU(cuStreamGetPriority(lazy, &priority));
  EXPECT(priority == least);
  // The runtime API reads the same records, and its own streams' too.
  int runtime_priority = 99;
  unsigned runtime_flags = 99;
  CHECK_CUDA(cudaStreamGetPriority(urgent, &runtime_priority));
  CHECK_CUDA(cudaStreamGetFlags(urgent, &runtime_flags));
  EXPECT(runtime_priority == greatest && runtime_flags == cudaStreamNonBlocking);
  cudaStream_t runtime_stream;
  CHECK_CUDA(cudaStreamCreateWithPriority(&runtime_stream, cudaStreamNonBlocking, greatest));
  CHECK_CU(cuStreamGetPriority(runtime_stream, &priority));
  CHECK_CU(cuStreamGetFlags(runtime_stream, &flags));
  EXPECT(priority == greatest && flags == CU_STREAM_NON_BLOCKING);
  // Unknown creation flags.
  CUstream refused = nullptr;
  EXPECT(cuStreamCreate(&refused, 0x4) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cudaStreamCreateWithFlags(&refused, 0x4) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);

  // The default stream, by any of its names, has the default flags and priority.
  for (CUstream special : {CUstream(nullptr), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    CHECK_CU(cuStreamGetFlags(special, &flags));
    CHECK_CU(cuStreamGetPriority(special, &priority));
    EXPECT(flags == 0 && priority == 0);
  }

  // Ids: unique per stream, one for the default stream, the same through both APIs.
  unsigned long long ids[4] = {};
  CHECK_CU(cuStreamGetId(plain, &ids[0]));
  CHECK_CU(cuStreamGetId(urgent, &ids[1]));
  CHECK_CU(cuStreamGetId(lazy, &ids[2]));
  CHECK_CU(cuStreamGetId(nullptr, &ids[3]));
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) EXPECT(ids[i] != ids[j]);
  }
  unsigned long long id = 0;
  CHECK_CU(cuStreamGetId(CU_STREAM_LEGACY, &id));
  EXPECT(id == ids[3]);
  CHECK_CUDA(cudaStreamGetId(lazy, &id));
  EXPECT(id == ids[2]);

  // Contexts: the one current when the stream was created; for the default stream the caller's.
  CUcontext primary = nullptr, created = nullptr, context = nullptr;
  CHECK_CU(cuCtxGetCurrent(&primary));
  CHECK_CU(cuStreamGetCtx(plain, &context));
  EXPECT(context == primary);
  CHECK_CU(cuCtxCreate(&created, nullptr, 0, 0));  // pushes it
  CUstream in_created;
  CHECK_CU(cuStreamCreate(&in_created, CU_STREAM_DEFAULT));
  CHECK_CU(cuStreamGetCtx(in_created, &context));
  EXPECT(context == created);
  CHECK_CU(cuStreamGetCtx(nullptr, &context));
  EXPECT(context == created);
  CUgreenCtx green = reinterpret_cast<CUgreenCtx>(0x1);
  CHECK_CU(cuStreamGetCtx_v2(plain, &context, &green));
  EXPECT(context == primary && green == nullptr);
  CHECK_CU(cuStreamDestroy(in_created));
  CHECK_CU(cuCtxPopCurrent(&context));
  EXPECT(context == created);
  CHECK_CU(cuCtxDestroy(created));
  CHECK_CU(cuStreamGetCtx(CU_STREAM_PER_THREAD, &context));
  EXPECT(context == primary);

  EXPECT(cuStreamGetPriority(plain, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamGetFlags(plain, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamGetId(plain, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamGetCtx(plain, nullptr) == CUDA_ERROR_INVALID_VALUE);
  for (CUstream stream : {plain, urgent, lazy}) CHECK_CU(cuStreamDestroy(stream));
  CHECK_CUDA(cudaStreamDestroy(runtime_stream));
  // A destroyed stream is no stream.
  EXPECT(cuStreamGetPriority(plain, &priority) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuStreamGetId(urgent, &id) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cudaStreamGetFlags(runtime_stream, &runtime_flags) == cudaErrorInvalidResourceHandle);
  EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
}

// What the host functions saw and did, in the order they ran.
struct Trace {
  unsigned* data = nullptr;  // mapped memory the kernels write
  CUstream stream = nullptr;
  std::vector<int> order;
  bool saw_kernels = false;  // every element was 3 when the first host function ran
  bool callback_stream_ok = false;
  CUresult callback_status = CUDA_ERROR_UNKNOWN;
};

void CUDA_CB AfterKernels(void* user) {
  auto* trace = static_cast<Trace*>(user);
  trace->order.push_back(1);
  bool all_three = true;
  for (unsigned i = 0; i < kN; ++i) all_three = all_three && trace->data[i] == 3;
  trace->saw_kernels = all_three;
  for (unsigned i = 0; i < kN; ++i) trace->data[i] = 100;  // the next kernel must see this
}

void CUDA_CB Callback(CUstream stream, CUresult status, void* user) {
  auto* trace = static_cast<Trace*>(user);
  trace->order.push_back(2);
  trace->callback_stream_ok = stream == trace->stream;
  trace->callback_status = status;
}

void CUDA_CB Last(void* user) { static_cast<Trace*>(user)->order.push_back(3); }

void NeverCalled(void*) {
  std::fprintf(stderr, "a host function on a bad stream ran\n");
  std::exit(1);
}

void CUDA_CB NeverCalledCallback(CUstream, CUresult, void*) { NeverCalled(nullptr); }
void CUDART_CB NeverCalledRuntimeCallback(cudaStream_t, cudaError_t, void*) {
  NeverCalled(nullptr);
}

void TestHostFunctions() {
  unsigned* host = nullptr;
  CHECK_CU(cuMemHostAlloc(reinterpret_cast<void**>(&host), kN * sizeof(unsigned),
                          CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&device, host, 0));
  for (unsigned i = 0; i < kN; ++i) host[i] = 0;

  Trace trace;
  trace.data = host;
  CHECK_CU(cuStreamCreate(&trace.stream, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 3; ++i) AddOne(trace.stream, device);
  CHECK_CU(cuLaunchHostFunc(trace.stream, AfterKernels, &trace));
  AddOne(trace.stream, device);
  CHECK_CU(cuStreamAddCallback(trace.stream, Callback, &trace, 0));
  CHECK_CU(cuLaunchHostFunc(trace.stream, Last, &trace));
  CHECK_CU(cuStreamSynchronize(trace.stream));
  EXPECT(trace.order == (std::vector<int>{1, 2, 3}));
  EXPECT(trace.saw_kernels);
  EXPECT(trace.callback_stream_ok && trace.callback_status == CUDA_SUCCESS);
  for (unsigned i = 0; i < kN; ++i) EXPECT(host[i] == 101);

  // On the default stream too.
  trace.order.clear();
  CHECK_CU(cuLaunchHostFunc(nullptr, Last, &trace));
  CHECK_CU(cuCtxSynchronize());
  EXPECT(trace.order == (std::vector<int>{3}));

  EXPECT(cuLaunchHostFunc(trace.stream, nullptr, &trace) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamAddCallback(trace.stream, nullptr, &trace, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamAddCallback(trace.stream, Callback, &trace, 1) == CUDA_ERROR_INVALID_VALUE);

  // A destroyed stream and a handle the shim never made: refused by the call itself, in both
  // APIs, and nothing is left to fail the next synchronisation.
  CUstream destroyed = trace.stream;
  CHECK_CU(cuStreamDestroy(destroyed));
  const CUstream forged = reinterpret_cast<CUstream>(0x7e57ab1e);
  for (CUstream bad : {destroyed, forged}) {
    EXPECT(cuLaunchHostFunc(bad, NeverCalled, nullptr) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuStreamAddCallback(bad, NeverCalledCallback, nullptr, 0) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cudaLaunchHostFunc(bad, NeverCalled, nullptr) == cudaErrorInvalidResourceHandle);
    EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
    EXPECT(cudaStreamAddCallback(bad, NeverCalledRuntimeCallback, nullptr, 0) ==
           cudaErrorInvalidResourceHandle);
    EXPECT(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  }
  CHECK_CU(cuCtxSynchronize());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CU(cuMemFreeHost(host));
}

void TestLimits() {
  size_t stack = 0;
  CHECK_CU(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
  EXPECT(stack > 0);
  const size_t wanted = stack + 1024;
  CHECK_CU(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, wanted));
  size_t value = 0;
  CHECK_CU(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE));
  EXPECT(value == wanted);
  CHECK_CUDA(cudaDeviceGetLimit(&value, cudaLimitStackSize));
  EXPECT(value == wanted);
  const size_t fifo = 2 << 20;
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, fifo));
  CHECK_CU(cuCtxGetLimit(&value, CU_LIMIT_PRINTF_FIFO_SIZE));
  EXPECT(value == fifo);
  EXPECT(cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE) == CUDA_ERROR_INVALID_VALUE);
  // Kernels still run with the new stack size.
  CUdeviceptr data = 0;
  CHECK_CU(cuMemAlloc(&data, kN * sizeof(unsigned)));
  CHECK_CU(cuMemsetD32(data, 41, kN));
  AddOne(nullptr, data);
  std::vector<unsigned> host(kN);
  CHECK_CU(cuMemcpyDtoH(host.data(), data, kN * sizeof(unsigned)));
  for (unsigned v : host) EXPECT(v == 42);
  CHECK_CU(cuMemFree(data));
}

}  // namespace

int main() {
  const CUdevice device = UsePrimaryContext();
  CUmodule module;
  add_one = LoadFunction(&module, kAddOnePtx, "add_one");

  TestEntryPoints();
  TestStreamQueries();
  TestHostFunctions();
  TestLimits();

  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_streams: OK\n");
  return 0;
}
