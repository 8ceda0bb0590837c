// Wire structs of the CUDA call protocol (the table is ipc/cuda_calls.def): fixed-width PODs,
// device addresses and handles as uint64_t, host data in the bulk area. Handles are the
// server's per-client names, opaque to the client; 0 names the client's default stream.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/stream_priority.h"
#include "ipc/bulk.h"
#include "ipc/library_calls.h"
#include "ipc/message.h"
#include "ipc/vendor_calls.h"

namespace tally::ipc {

// The schema number exchanged in the handshake (Hello::schema_version).
inline constexpr uint32_t kCudaCallsSchemaVersion = 20;

enum class CallMode { kSync, kWait, kAsync };

enum class CallId : uint32_t {
#define TALLY_CUDA_CALL(name, id, mode) k##name = id,
#include "ipc/cuda_calls.def"
};

// A response's type is its request's with this bit set; CallError has its own type.
inline constexpr uint32_t kResponseBit = 1u << 16;
constexpr uint32_t RequestType(CallId id) { return static_cast<uint32_t>(id); }
constexpr uint32_t ResponseType(CallId id) { return static_cast<uint32_t>(id) | kResponseBit; }

// The answer to a sync call that failed: a CUresult (cuda.h), mapped to cudaError_t by the
// client, followed by the server's explanation as text (no NUL). Sent with kFlagError.
struct CallError {
  static constexpr uint32_t kType = 0xffff;
  static constexpr bool kHasTail = true;
  int32_t result;
  uint32_t reserved;
};

struct Dim3 {
  uint32_t x, y, z;
};

// Device attributes travel indexed by their CUdevice_attribute value (which cudaDeviceAttr
// shares): room for every value cuda.h has (CU_DEVICE_ATTRIBUTE_MAX is 148 in CUDA 13) and more.
inline constexpr size_t kDeviceAttributeSlots = 256;

#define TALLY_INTERNAL_REQUEST(name) static constexpr uint32_t kType = RequestType(CallId::k##name)
#define TALLY_INTERNAL_RESPONSE(name) \
  static constexpr uint32_t kType = ResponseType(CallId::k##name)

// Device. State that never changes is fetched once and answered locally by the client.
struct GetDeviceInfoRequest {
  TALLY_INTERNAL_REQUEST(GetDeviceInfo);
  uint32_t reserved;
};
struct GetDeviceInfoResponse {
  TALLY_INTERNAL_RESPONSE(GetDeviceInfo);
  char name[256];  // NUL-terminated
  uint8_t uuid[16];
  uint64_t total_memory;
  int32_t driver_version;
  StreamPriority stream_priority_least;  // cuCtxGetStreamPriorityRange
  StreamPriority stream_priority_greatest;
  // Every device attribute of the server's cuda.h, as the device answers it (server.cc);
  // answered[a] is 0 where the driver refused attribute a (a driver older than that cuda.h).
  int32_t attributes[kDeviceAttributeSlots];
  uint8_t answered[kDeviceAttributeSlots];
};
struct DeviceSynchronizeRequest {
  TALLY_INTERNAL_REQUEST(DeviceSynchronize);
  uint32_t reserved;
};
struct DeviceSynchronizeResponse {
  TALLY_INTERNAL_RESPONSE(DeviceSynchronize);
  uint32_t reserved;
};
struct MemGetInfoRequest {
  TALLY_INTERNAL_REQUEST(MemGetInfo);
  uint32_t reserved;
};
struct MemGetInfoResponse {
  TALLY_INTERNAL_RESPONSE(MemGetInfo);
  uint64_t free_bytes;
  uint64_t total_bytes;
};

// Memory. Copies with host memory are synchronous for the host (as cudaMemcpy from pageable
// memory is): the client may reuse the bulk block as soon as the response arrives.
struct MemAllocRequest {
  TALLY_INTERNAL_REQUEST(MemAlloc);
  uint64_t size;
};
struct MemAllocResponse {
  TALLY_INTERNAL_RESPONSE(MemAlloc);
  uint64_t device_ptr;
};
struct MemFreeRequest {
  TALLY_INTERNAL_REQUEST(MemFree);
  uint64_t device_ptr;
};
struct MemFreeResponse {
  TALLY_INTERNAL_RESPONSE(MemFree);
  uint32_t reserved;
};
struct MemcpyHtoDRequest {
  TALLY_INTERNAL_REQUEST(MemcpyHtoD);
  uint64_t dst;
  uint64_t stream;
  BulkRef src;  // src.size bytes are copied
};
struct MemcpyHtoDResponse {
  TALLY_INTERNAL_RESPONSE(MemcpyHtoD);
  uint32_t reserved;
};
struct MemcpyDtoHRequest {
  TALLY_INTERNAL_REQUEST(MemcpyDtoH);
  uint64_t src;
  uint64_t stream;
  BulkRef dst;  // dst.size bytes are copied
};
struct MemcpyDtoHResponse {
  TALLY_INTERNAL_RESPONSE(MemcpyDtoH);
  uint32_t reserved;
};
struct MemcpyDtoDRequest {
  TALLY_INTERNAL_REQUEST(MemcpyDtoD);
  uint64_t dst;
  uint64_t src;
  uint64_t size;
  uint64_t stream;
};
// Sets size / element_size elements of 1, 2 or 4 bytes (cudaMemset: bytes; cuMemsetD16/D32)
// to the low element_size bytes of `value`.
struct MemsetRequest {
  TALLY_INTERNAL_REQUEST(Memset);
  uint32_t value;
  uint32_t element_size;
  uint64_t dst;
  uint64_t size;
  uint64_t stream;
};

// Streams.
struct StreamCreateRequest {
  TALLY_INTERNAL_REQUEST(StreamCreate);
  uint32_t flags;  // cudaStreamNonBlocking
  StreamPriority stream_priority;  // clamped to the device's range
};
struct StreamCreateResponse {
  TALLY_INTERNAL_RESPONSE(StreamCreate);
  uint64_t stream;
};
struct StreamDestroyRequest {
  TALLY_INTERNAL_REQUEST(StreamDestroy);
  uint64_t stream;
};
struct StreamDestroyResponse {
  TALLY_INTERNAL_RESPONSE(StreamDestroy);
  uint32_t reserved;
};
struct StreamSynchronizeRequest {
  TALLY_INTERNAL_REQUEST(StreamSynchronize);
  uint64_t stream;
};
struct StreamSynchronizeResponse {
  TALLY_INTERNAL_RESPONSE(StreamSynchronize);
  uint32_t reserved;
};
// Answered with CallError(CUDA_ERROR_NOT_READY) while work is pending.
struct StreamQueryRequest {
  TALLY_INTERNAL_REQUEST(StreamQuery);
  uint64_t stream;
};
struct StreamQueryResponse {
  TALLY_INTERNAL_RESPONSE(StreamQuery);
  uint32_t reserved;
};
struct StreamWaitEventRequest {
  TALLY_INTERNAL_REQUEST(StreamWaitEvent);
  uint32_t flags;
  uint64_t stream;
  uint64_t event;
};

// Events.
struct EventCreateRequest {
  TALLY_INTERNAL_REQUEST(EventCreate);
  uint32_t flags;  // cudaEventDisableTiming, cudaEventBlockingSync
};
struct EventCreateResponse {
  TALLY_INTERNAL_RESPONSE(EventCreate);
  uint64_t event;
};
struct EventDestroyRequest {
  TALLY_INTERNAL_REQUEST(EventDestroy);
  uint64_t event;
};
struct EventDestroyResponse {
  TALLY_INTERNAL_RESPONSE(EventDestroy);
  uint32_t reserved;
};
struct EventRecordRequest {
  TALLY_INTERNAL_REQUEST(EventRecord);
  uint64_t event;
  uint64_t stream;
};
struct EventSynchronizeRequest {
  TALLY_INTERNAL_REQUEST(EventSynchronize);
  uint64_t event;
};
struct EventSynchronizeResponse {
  TALLY_INTERNAL_RESPONSE(EventSynchronize);
  uint32_t reserved;
};
struct EventQueryRequest {
  TALLY_INTERNAL_REQUEST(EventQuery);
  uint64_t event;
};
struct EventQueryResponse {
  TALLY_INTERNAL_RESPONSE(EventQuery);
  uint32_t reserved;
};
struct EventElapsedTimeRequest {
  TALLY_INTERNAL_REQUEST(EventElapsedTime);
  uint64_t start;
  uint64_t end;
};
struct EventElapsedTimeResponse {
  TALLY_INTERNAL_RESPONSE(EventElapsedTime);
  float milliseconds;
};

// Modules and launches. A module image (a fatbin as __cudaRegisterFatBinary's wrapper points
// to it, or PTX text) travels in pieces through the bulk area, so that an image of any size up
// to kMaxModuleImage passes an area of any size: each request carries the bytes at `offset` of
// the `image_size`-byte image, in order, one image at a time per client (a piece at offset 0
// starts a new image). The answer to the last piece, once the server has checked the whole
// image against its content hash, is this client's handle for the module (the server keeps one
// per distinct content); earlier pieces are answered with module 0.
inline constexpr uint64_t kMaxModuleImage = uint64_t{1} << 30;
struct RegisterFatbinRequest {
  TALLY_INTERNAL_REQUEST(RegisterFatbin);
  uint64_t content_hash;
  uint64_t image_size;
  uint64_t offset;
  BulkRef piece;
};
struct RegisterFatbinResponse {
  TALLY_INTERNAL_RESPONSE(RegisterFatbin);
  uint64_t module;
};
// The tail is the kernel's mangled name (no NUL).
struct GetFunctionRequest {
  TALLY_INTERNAL_REQUEST(GetFunction);
  static constexpr bool kHasTail = true;
  uint64_t module;
};
// One kernel parameter's place in the parameter buffer (cuLaunchKernel's layout).
struct ParamSlot {
  uint32_t offset;
  uint32_t size;
};
// The tail holds param_count ParamSlots.
struct GetFunctionResponse {
  TALLY_INTERNAL_RESPONSE(GetFunction);
  static constexpr bool kHasTail = true;
  uint32_t param_count;
  uint32_t param_buffer_size;
  uint64_t function;
  // The attributes a launch is checked against in the client (one-way, it cannot wait for the
  // server's verdict): CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, _SHARED_SIZE_BYTES and
  // _MAX_DYNAMIC_SHARED_SIZE_BYTES.
  int32_t max_threads_per_block;
  int32_t static_shared_bytes;
  int32_t max_dynamic_shared_bytes;
  uint32_t reserved;
};
// The tail is the packed parameter buffer, param_buffer_size bytes.
// LaunchKernelRequest::flags.
inline constexpr uint32_t kLaunchCooperative = 1u << 0;  // cudaLaunchCooperativeKernel
struct LaunchKernelRequest {
  TALLY_INTERNAL_REQUEST(LaunchKernel);
  static constexpr bool kHasTail = true;
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes;
  uint32_t flags;  // kLaunchCooperative
  uint64_t function;
  uint64_t stream;
  // Cluster dimensions given at the launch (cudaLaunchAttributeClusterDimension); 0 x 0 x 0:
  // none (the kernel's own __cluster_dims__, if any, apply).
  Dim3 cluster;
  // An ipc::Library: the library whose call (libraries/) this launch is the first launch of,
  // which the server counts; kNone for any other launch. A value no Library has is refused.
  uint32_t library_call;
};
static_assert(sizeof(LaunchKernelRequest) == 64, "no padding: every byte is a field");

// The libraries whose calls run in the vendor library inside the server for this client (the
// server's --library-kernels rule, decided when the client connected).
struct LibraryModesRequest {
  TALLY_INTERNAL_REQUEST(LibraryModes);
  uint32_t reserved;
};
struct LibraryModesResponse {
  TALLY_INTERNAL_RESPONSE(LibraryModes);
  LibrarySet vendor;
};

// A cuBLAS GEMM run by the vendor library on the client's stream, one unit of its queue.
struct VendorGemmRequest {
  TALLY_INTERNAL_REQUEST(VendorGemm);
  VendorGemm call;
};

// A cuBLASLt matmul run by the vendor library on the client's stream, likewise.
struct VendorLtMatmulRequest {
  TALLY_INTERNAL_REQUEST(VendorLtMatmul);
  VendorLtMatmul call;
};

// Drops this client's handle of a module (cuModuleUnload) and of the functions found in it;
// launches already queued keep the module loaded until they ran.
struct ModuleUnloadRequest {
  TALLY_INTERNAL_REQUEST(ModuleUnload);
  uint64_t module;
};
struct ModuleUnloadResponse {
  TALLY_INTERNAL_RESPONSE(ModuleUnload);
  uint32_t reserved;
};

// A module-scope variable (__device__, __constant__) of this client's module; the tail is its
// mangled name (no NUL). Its range becomes device memory the client may copy to and from.
struct GetGlobalRequest {
  TALLY_INTERNAL_REQUEST(GetGlobal);
  static constexpr bool kHasTail = true;
  uint64_t module;
};
struct GetGlobalResponse {
  TALLY_INTERNAL_RESPONSE(GetGlobal);
  uint64_t device_ptr;
  uint64_t size;
};

// Kernel attributes, indexed by CUfunction_attribute (cuda.h: 0 MAX_THREADS_PER_BLOCK ...
// 15 CLUSTER_SCHEDULING_POLICY_PREFERENCE); attributes the driver does not know read as 0.
inline constexpr size_t kFuncAttributeSlots = 16;
struct FuncGetAttributesRequest {
  TALLY_INTERNAL_REQUEST(FuncGetAttributes);
  uint64_t function;
};
struct FuncGetAttributesResponse {
  TALLY_INTERNAL_RESPONSE(FuncGetAttributes);
  int32_t values[kFuncAttributeSlots];
};
// cudaFuncAttribute and CUfunction_attribute share the values of the settable attributes.
struct FuncSetAttributeRequest {
  TALLY_INTERNAL_REQUEST(FuncSetAttribute);
  uint32_t attribute;
  int32_t value;
  uint64_t function;
};
struct FuncSetAttributeResponse {
  TALLY_INTERNAL_RESPONSE(FuncSetAttribute);
  uint32_t reserved;
};
struct OccupancyRequest {
  TALLY_INTERNAL_REQUEST(Occupancy);
  int32_t block_size;
  uint64_t function;
  uint64_t dynamic_shared_bytes;
};
struct OccupancyResponse {
  TALLY_INTERNAL_RESPONSE(Occupancy);
  int32_t blocks_per_multiprocessor;
};
// cuOccupancyMaxActiveClusters for a launch of `block` threads per block in clusters of
// `cluster` (0 x 0 x 0: the kernel's own cluster shape).
struct OccupancyClustersRequest {
  TALLY_INTERNAL_REQUEST(OccupancyClusters);
  Dim3 block;
  Dim3 cluster;
  uint64_t function;
  uint64_t dynamic_shared_bytes;
};
struct OccupancyClustersResponse {
  TALLY_INTERNAL_RESPONSE(OccupancyClusters);
  int32_t clusters;
};

// Page-locked host memory (cudaMallocHost, cudaHostAlloc, cuMemHostAlloc, cudaMallocManaged):
// page-aligned blocks of the client's host region (ipc/segment.h), which the client allocates
// and the server registers with the device. Both processes see a block at the same address, and
// with unified addressing that address is also its device pointer.
struct HostAllocRequest {
  TALLY_INTERNAL_REQUEST(HostAlloc);
  uint64_t address;  // page-aligned, inside the host region
  uint64_t size;     // a multiple of the page size
};
struct HostAllocResponse {
  TALLY_INTERNAL_RESPONSE(HostAlloc);
  uint32_t reserved;
};
// The client's queued work is finished first (cudaFreeHost synchronises).
struct HostFreeRequest {
  TALLY_INTERNAL_REQUEST(HostFree);
  uint64_t address;
};
struct HostFreeResponse {
  TALLY_INTERNAL_RESPONSE(HostFree);
  uint32_t reserved;
};

// cudaDeviceReset: the client's work is finished, then everything it owns is destroyed except
// its default stream and its modules (server/handlers/device.cc).
struct DeviceResetRequest {
  TALLY_INTERNAL_REQUEST(DeviceReset);
  uint32_t reserved;
};
struct DeviceResetResponse {
  TALLY_INTERNAL_RESPONSE(DeviceReset);
  uint32_t reserved;
};

// Where one side of a copy lives.
enum class MemorySpace : uint32_t {
  kDevice = 0,      // device memory (also mapped and managed host blocks, which kernels use)
  kHostRegion = 1,  // a host block of the client's host region, as host memory
  kBulk = 2,        // the bulk area; `address` is an offset into it
};
// A box of width x height x depth bytes/rows/slices starting at `address`, rows `pitch` bytes
// apart and slices `pitch * slice_height` bytes apart (cudaPitchedPtr's pitch and ysize).
struct CopySide {
  uint32_t space;  // MemorySpace
  uint32_t reserved;
  uint64_t address;
  uint64_t pitch;
  uint64_t slice_height;
};
struct CopyExtent {
  uint64_t width;  // bytes
  uint64_t height;
  uint64_t depth;
};
struct BoxCopy {
  CopySide dst;
  CopySide src;
  CopyExtent extent;
  uint64_t stream;
};
// One-way: neither side is in the bulk area (the data stays valid without the client waiting).
struct Memcpy3DRequest {
  TALLY_INTERNAL_REQUEST(Memcpy3D);
  BoxCopy copy;
};
// One side is in the bulk area; answered once the data has arrived.
struct Memcpy3DStagedRequest {
  TALLY_INTERNAL_REQUEST(Memcpy3DStaged);
  BoxCopy copy;
};
struct Memcpy3DStagedResponse {
  TALLY_INTERNAL_RESPONSE(Memcpy3DStaged);
  uint32_t reserved;
};
// cudaMemset3D/cudaMemset2D, cuMemsetD2D8/16/32: sets the box's elements of `element_size`
// (1, 2 or 4) bytes to the low bytes of `value`; the address, pitch and width are multiples of
// it. dst.space is kDevice.
struct Memset3DRequest {
  TALLY_INTERNAL_REQUEST(Memset3D);
  uint32_t value;
  uint32_t element_size;
  CopySide dst;
  CopyExtent extent;
  uint64_t stream;
};

// Host functions. The function, its data and the application's stream value are the client's,
// echoed back to it in RunHostCallback; the server only keeps the order.
enum class HostCallbackKind : uint32_t {
  kHostFunc = 0,        // cudaHostFn_t(data)
  kStreamCallback = 1,  // cudaStreamCallback_t(stream, status, data)
};
struct LaunchHostFuncRequest {
  TALLY_INTERNAL_REQUEST(LaunchHostFunc);
  uint32_t kind;  // HostCallbackKind
  uint64_t stream;
  uint64_t app_stream;  // the cudaStream_t the application passed
  uint64_t function;
  uint64_t data;
};
// Server -> client on the callback ring: run this now (the stream waits for HostCallbackDone).
struct RunHostCallback {
  static constexpr uint32_t kType = 102;
  uint32_t kind;   // HostCallbackKind
  int32_t status;  // for kStreamCallback: the stream's CUresult
  uint64_t app_stream;
  uint64_t function;
  uint64_t data;
  uint64_t gate;  // named in HostCallbackDone
};
struct HostCallbackDoneRequest {
  TALLY_INTERNAL_REQUEST(HostCallbackDone);
  uint32_t reserved;
  uint64_t gate;
};
static_assert(WireMessage<RunHostCallback>);

// Context limits (cudaDeviceSetLimit): cudaLimit and CUlimit share their values.
struct DeviceSetLimitRequest {
  TALLY_INTERNAL_REQUEST(DeviceSetLimit);
  uint32_t limit;
  uint64_t value;
};
struct DeviceSetLimitResponse {
  TALLY_INTERNAL_RESPONSE(DeviceSetLimit);
  uint32_t reserved;
};
struct DeviceGetLimitRequest {
  TALLY_INTERNAL_REQUEST(DeviceGetLimit);
  uint32_t limit;
};
struct DeviceGetLimitResponse {
  TALLY_INTERNAL_RESPONSE(DeviceGetLimit);
  uint64_t value;
};

// Device output: the tail holds records of a DeviceOutputRecord each followed by its `size`
// bytes of text; `more` when the server holds more than one response carries.
struct TakeDeviceOutputRequest {
  TALLY_INTERNAL_REQUEST(TakeDeviceOutput);
  uint32_t reserved;
};
struct DeviceOutputRecord {
  uint32_t stream;  // 1: stdout, 2: stderr
  uint32_t size;
};
struct TakeDeviceOutputResponse {
  TALLY_INTERNAL_RESPONSE(TakeDeviceOutput);
  static constexpr bool kHasTail = true;
  uint32_t more;
};

// Memory pools: `pool` is a handle the server minted (MemPoolCreate, MemPoolGet).
struct MemPoolCreateRequest {
  TALLY_INTERNAL_REQUEST(MemPoolCreate);
  uint32_t reserved;
};
struct MemPoolCreateResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolCreate);
  uint64_t pool;
};
struct MemPoolDestroyRequest {
  TALLY_INTERNAL_REQUEST(MemPoolDestroy);
  uint32_t reserved;
  uint64_t pool;
};
struct MemPoolDestroyResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolDestroy);
  uint32_t reserved;
};
enum class PoolKind : uint32_t { kDefault = 0, kCurrent = 1 };
struct MemPoolGetRequest {
  TALLY_INTERNAL_REQUEST(MemPoolGet);
  PoolKind kind;
};
struct MemPoolGetResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolGet);
  uint64_t pool;
};
struct MemPoolSetCurrentRequest {
  TALLY_INTERNAL_REQUEST(MemPoolSetCurrent);
  uint32_t reserved;
  uint64_t pool;
};
struct MemPoolSetCurrentResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolSetCurrent);
  uint32_t reserved;
};
struct MemPoolAllocRequest {
  TALLY_INTERNAL_REQUEST(MemPoolAlloc);
  uint32_t reserved;
  uint64_t pool;  // 0: the current pool
  uint64_t size;
  uint64_t stream;
};
struct MemPoolAllocResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolAlloc);
  uint64_t device_ptr;
};
struct MemPoolFreeRequest {
  TALLY_INTERNAL_REQUEST(MemPoolFree);
  uint32_t reserved;
  uint64_t device_ptr;
  uint64_t stream;
};
struct MemPoolFreeResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolFree);
  uint32_t reserved;
};
struct MemPoolTrimRequest {
  TALLY_INTERNAL_REQUEST(MemPoolTrim);
  uint32_t reserved;
  uint64_t pool;
  uint64_t keep_bytes;
};
struct MemPoolTrimResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolTrim);
  uint32_t reserved;
};
struct MemPoolSetAttributeRequest {
  TALLY_INTERNAL_REQUEST(MemPoolSetAttribute);
  uint32_t attribute;  // CUmemPool_attribute
  uint64_t pool;
  uint64_t value;
};
struct MemPoolSetAttributeResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolSetAttribute);
  uint32_t reserved;
};
struct MemPoolGetAttributeRequest {
  TALLY_INTERNAL_REQUEST(MemPoolGetAttribute);
  uint32_t attribute;
  uint64_t pool;
};
struct MemPoolGetAttributeResponse {
  TALLY_INTERNAL_RESPONSE(MemPoolGetAttribute);
  uint64_t value;
};

#undef TALLY_INTERNAL_REQUEST
#undef TALLY_INTERNAL_RESPONSE

// Per call: its mode, and for sync calls the response type. Every request is a wire message, and
// so is every response.
template <typename Request>
struct CallTraits;

#define TALLY_INTERNAL_kSync(name)                     \
  template <>                                          \
  struct CallTraits<name##Request> {                   \
    static constexpr CallMode kMode = CallMode::kSync; \
    static constexpr const char* kName = #name;        \
    using Response = name##Response;                   \
  };                                                   \
  static_assert(WireMessage<name##Request> && WireMessage<name##Response>);
#define TALLY_INTERNAL_kWait(name)                     \
  template <>                                          \
  struct CallTraits<name##Request> {                   \
    static constexpr CallMode kMode = CallMode::kWait; \
    static constexpr const char* kName = #name;        \
    using Response = name##Response;                   \
  };                                                   \
  static_assert(WireMessage<name##Request> && WireMessage<name##Response>);
#define TALLY_INTERNAL_kAsync(name)                     \
  template <>                                           \
  struct CallTraits<name##Request> {                    \
    static constexpr CallMode kMode = CallMode::kAsync; \
    static constexpr const char* kName = #name;         \
  };                                                    \
  static_assert(WireMessage<name##Request>);
#define TALLY_CUDA_CALL(name, id, mode) TALLY_INTERNAL_##mode(name)
#include "ipc/cuda_calls.def"
#undef TALLY_INTERNAL_kSync
#undef TALLY_INTERNAL_kWait
#undef TALLY_INTERNAL_kAsync
static_assert(WireMessage<CallError>);

}  // namespace tally::ipc
