// The per-thread default stream exports of libcudart: a program built with
// `nvcc --default-stream per-thread` (or defining CUDA_API_PER_THREAD_DEFAULT_STREAM) calls
// `cudaMemcpyAsync_ptsz` for `cudaMemcpyAsync`, `cudaMemcpy_ptds` for `cudaMemcpy`, ...
// (cuda_runtime_api.h, __CUDART_API_PTSZ/__CUDART_API_PTDS). Each is its runtime counterpart
// with the NULL stream meaning the calling thread's per-thread default stream instead of the
// legacy one (CUDA Runtime API, "Per-thread default stream"); explicit handles, cudaStreamLegacy
// included, keep their meaning. The exports of calls the shim does not provide stay
// unsupported.cc's stubs.
#include <cuda_runtime_api.h>

#include "client/streams.h"

using tally::client::PerThreadDefaultScope;

extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                          size_t shared_bytes, cudaStream_t stream) noexcept;

// Declared with decltype(base) first, so that a parameter list (or exception specification)
// differing from the base function's is a compile error.
#define TALLY_PER_THREAD(base, suffix, params, args)                      \
  extern "C" decltype(base) base##suffix;                                 \
  extern "C" cudaError_t base##suffix params noexcept(noexcept(base args)) { \
    const PerThreadDefaultScope scope;                                    \
    return base args;                                                     \
  }
#define TALLY_PTSZ(base, params, args) TALLY_PER_THREAD(base, _ptsz, params, args)
#define TALLY_PTDS(base, params, args) TALLY_PER_THREAD(base, _ptds, params, args)

// Launches.
TALLY_PTSZ(cudaLaunchKernel,
           (const void* f, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
           (f, grid, block, args, shmem, s))
TALLY_PTSZ(__cudaLaunchKernel,
           (cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
           (k, grid, block, args, shmem, s))
TALLY_PTSZ(cudaLaunchCooperativeKernel,
           (const void* f, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
           (f, grid, block, args, shmem, s))
TALLY_PTSZ(cudaLaunchKernelExC, (const cudaLaunchConfig_t* config, const void* f, void** args),
           (config, f, args))
TALLY_PTSZ(cudaLaunchHostFunc, (cudaStream_t s, cudaHostFn_t fn, void* data), (s, fn, data))
TALLY_PTSZ(cudaStreamAddCallback,
           (cudaStream_t s, cudaStreamCallback_t fn, void* data, unsigned int flags),
           (s, fn, data, flags))

// Streams and events.
TALLY_PTSZ(cudaStreamSynchronize, (cudaStream_t s), (s))
TALLY_PTSZ(cudaStreamQuery, (cudaStream_t s), (s))
TALLY_PTSZ(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int flags),
           (s, e, flags))
TALLY_PTSZ(cudaStreamGetFlags, (cudaStream_t s, unsigned int* flags), (s, flags))
TALLY_PTSZ(cudaStreamGetPriority, (cudaStream_t s, int* priority), (s, priority))
TALLY_PTSZ(cudaStreamGetId, (cudaStream_t s, unsigned long long* id), (s, id))
TALLY_PTSZ(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
TALLY_PTSZ(cudaEventRecordWithFlags, (cudaEvent_t e, cudaStream_t s, unsigned int flags),
           (e, s, flags))
TALLY_PTSZ(cudaStreamSetAttribute,
           (cudaStream_t s, cudaLaunchAttributeID id, const cudaLaunchAttributeValue* value),
           (s, id, value))
TALLY_PTSZ(cudaStreamGetAttribute,
           (cudaStream_t s, cudaLaunchAttributeID id, cudaLaunchAttributeValue* value),
           (s, id, value))
TALLY_PTSZ(cudaStreamCopyAttributes, (cudaStream_t dst, cudaStream_t src), (dst, src))
TALLY_PTSZ(cudaStreamIsCapturing, (cudaStream_t s, cudaStreamCaptureStatus* status), (s, status))
TALLY_PTSZ(cudaStreamGetCaptureInfo,
           (cudaStream_t s, cudaStreamCaptureStatus* status, unsigned long long* id,
            cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
            const cudaGraphEdgeData** edges, size_t* count),
           (s, status, id, graph, dependencies, edges, count))

TALLY_PTSZ(cudaStreamBeginCapture, (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode))
TALLY_PTSZ(cudaStreamBeginCaptureToGraph,
           (cudaStream_t s, cudaGraph_t graph, const cudaGraphNode_t* nodes,
            const cudaGraphEdgeData* edges, size_t count, cudaStreamCaptureMode mode),
           (s, graph, nodes, edges, count, mode))
TALLY_PTSZ(cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t* graph), (s, graph))
TALLY_PTSZ(cudaStreamUpdateCaptureDependencies,
           (cudaStream_t s, cudaGraphNode_t* nodes, const cudaGraphEdgeData* edges, size_t count,
            unsigned int flags),
           (s, nodes, edges, count, flags))
// Graphs.
TALLY_PTSZ(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t s), (exec, s))
TALLY_PTSZ(cudaGraphUpload, (cudaGraphExec_t exec, cudaStream_t s), (exec, s))
TALLY_PTSZ(cudaGraphInstantiateWithParams,
           (cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphInstantiateParams* params),
           (exec, graph, params))
// Memory.
TALLY_PTSZ(cudaMallocAsync, (void** p, size_t size, cudaStream_t s), (p, size, s))
TALLY_PTSZ(cudaFreeAsync, (void* p, cudaStream_t s), (p, s))
TALLY_PTSZ(cudaMemPrefetchAsync,
           (const void* p, size_t n, cudaMemLocation to, unsigned int flags, cudaStream_t s),
           (p, n, to, flags, s))
TALLY_PTSZ(cudaStreamAttachMemAsync, (cudaStream_t s, void* p, size_t n, unsigned int flags),
           (s, p, n, flags))
TALLY_PTSZ(cudaMemcpyAsync,
           (void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s),
           (dst, src, n, kind, s))
TALLY_PTDS(cudaMemcpy, (void* dst, const void* src, size_t n, cudaMemcpyKind kind),
           (dst, src, n, kind))
TALLY_PTSZ(cudaMemcpy2DAsync,
           (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
            cudaMemcpyKind kind, cudaStream_t s),
           (dst, dpitch, src, spitch, width, height, kind, s))
TALLY_PTDS(cudaMemcpy2D,
           (void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
            cudaMemcpyKind kind),
           (dst, dpitch, src, spitch, width, height, kind))
TALLY_PTSZ(cudaMemcpy3DAsync, (const cudaMemcpy3DParms* p, cudaStream_t s), (p, s))
TALLY_PTDS(cudaMemcpy3D, (const cudaMemcpy3DParms* p), (p))
TALLY_PTSZ(cudaMemsetAsync, (void* dst, int value, size_t n, cudaStream_t s), (dst, value, n, s))
TALLY_PTDS(cudaMemset, (void* dst, int value, size_t n), (dst, value, n))
TALLY_PTSZ(cudaMemset2DAsync,
           (void* dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t s),
           (dst, pitch, value, width, height, s))
TALLY_PTDS(cudaMemset2D, (void* dst, size_t pitch, int value, size_t width, size_t height),
           (dst, pitch, value, width, height))
TALLY_PTSZ(cudaMemset3DAsync, (cudaPitchedPtr p, int value, cudaExtent extent, cudaStream_t s),
           (p, value, extent, s))
TALLY_PTDS(cudaMemset3D, (cudaPitchedPtr p, int value, cudaExtent extent), (p, value, extent))
TALLY_PTSZ(cudaMemcpyToSymbolAsync,
           (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind,
            cudaStream_t s),
           (symbol, src, n, offset, kind, s))
TALLY_PTDS(cudaMemcpyToSymbol,
           (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind kind),
           (symbol, src, n, offset, kind))
TALLY_PTSZ(cudaMemcpyFromSymbolAsync,
           (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind,
            cudaStream_t s),
           (dst, symbol, n, offset, kind, s))
TALLY_PTDS(cudaMemcpyFromSymbol,
           (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind kind),
           (dst, symbol, n, offset, kind))
