// Stream-ordered allocation and memory pools, runtime and driver API (CUDA Runtime API, "Stream
// Ordered Memory Allocator"; CUDA Driver API, "Stream Ordered Memory Allocator"). The pools are
// the server's (server/mem_pools.h); a cudaMemPool_t / CUmemoryPool is the server's handle.
// What Tally does not provide (IPC export and import, access from other devices) is left to the
// unsupported stubs (unsupported.cc): cudaErrorNotSupported, said once on stderr.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "client/capture.h"
#include "client/channel.h"
#include "client/copy.h"
#include "client/entry.h"
#include "client/graph_memory.h"
#include "client/handles.h"
#include "client/host_blocks.h"
#include "common/log.h"
#include "common/status.h"

using tally::client::CaptureWork;
using tally::client::Channel;
using tally::client::CheckDevice;
using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DevicePointer;
using tally::client::DeviceRanges;
using tally::client::GraphAllocation;
using tally::client::HostBlockKind;
using tally::client::HostBlocks;
using tally::client::MemAllocWork;
using tally::client::MemFreeWork;
using tally::client::NodeWork;
using tally::client::RangeKind;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::StreamHandle;
using tally::client::ToCudaError;
namespace ipc = tally::ipc;

namespace {

uint64_t PoolHandle(cudaMemPool_t pool) { return reinterpret_cast<uintptr_t>(pool); }
cudaMemPool_t ToPool(uint64_t handle) { return reinterpret_cast<cudaMemPool_t>(handle); }

// The runtime reports an unknown pool as cudaErrorInvalidValue where the driver reports
// CUDA_ERROR_INVALID_HANDLE (the server's answer).
absl::Status AsRuntime(absl::Status status) {
  if (ToCudaError(status) != cudaErrorInvalidResourceHandle) return status;
  return CudaError(cudaErrorInvalidValue, status.message());
}

template <typename Request>
absl::StatusOr<uint64_t> CallForPool(const Request& request) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(request));
  return answer.fields.pool;
}

template <typename Request>
absl::Status CallForNothing(const Request& request) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(request).status();
}

// Into a capturing stream, a stream-ordered allocation becomes an allocation node whose memory
// the graph reserves (graph_memory.h); false if the stream is not capturing.
absl::StatusOr<bool> CaptureAllocation(void** pointer, size_t size, cudaStream_t stream) {
  TALLY_ASSIGN_OR_RETURN(const tally::client::CaptureInfo info,
                         tally::client::GetCaptureInfo(stream));
  if (info.status != cudaStreamCaptureStatusActive) return false;
  TALLY_ASSIGN_OR_RETURN(auto allocation, GraphAllocation::Reserve(size));
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location = {.type = cudaMemLocationTypeDevice, .id = 0};
  params.bytesize = size;
  params.dptr = allocation->pointer();
  TALLY_ASSIGN_OR_RETURN(
      const bool captured, CaptureWork(stream, [&] {
        return NodeWork(MemAllocWork{.allocation = allocation, .params = params});
      }));
  if (captured) *pointer = params.dptr;
  return captured;
}

// `pool` 0 is the current pool. 0 bytes give a null pointer, as cudaMalloc does.
absl::Status AllocateAsync(void** pointer, size_t size, uint64_t pool, cudaStream_t stream) {
  TALLY_RETURN_IF_ERROR(CheckOut(pointer));
  *pointer = nullptr;
  if (size == 0) return absl::OkStatus();
  if (tally::client::capture_internal::active.load(std::memory_order_relaxed) != 0) {
    TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureAllocation(pointer, size, stream));
    if (captured) return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::MemPoolAllocRequest{
                       .reserved = 0, .pool = pool, .size = size, .stream = StreamHandle(stream)}));
  *pointer = reinterpret_cast<void*>(answer.fields.device_ptr);
  DeviceRanges::Get().Add(answer.fields.device_ptr, size, RangeKind::kAllocation);
  return absl::OkStatus();
}

// Managed memory is a host block (host_memory.cc), freed at once as cudaFree frees it.
// Into a capturing stream, a free of a graph's allocation becomes a free node; the memory stays
// the graph's in any case (graph_memory.h).
absl::Status FreeAsync(void* pointer, cudaStream_t stream) {
  if (pointer == nullptr) return absl::OkStatus();
  if (GraphAllocation::Owns(pointer)) {
    return CaptureWork(stream, [&] { return NodeWork(MemFreeWork{.pointer = pointer}); }).status();
  }
  if (tally::client::capture_internal::active.load(std::memory_order_relaxed) != 0) {
    TALLY_ASSIGN_OR_RETURN(const tally::client::CaptureInfo info,
                           tally::client::GetCaptureInfo(stream));
    if (info.status != cudaStreamCaptureStatusNone) {
      return CudaError(cudaErrorInvalidValue, "a captured free of memory no graph allocated");
    }
  }
  if (const auto block = HostBlocks::Get().Find(pointer);
      block && block->kind == HostBlockKind::kManaged) {
    return HostBlocks::Get().Free(pointer, HostBlockKind::kManaged);
  }
  TALLY_RETURN_IF_ERROR(CallForNothing(ipc::MemPoolFreeRequest{
      .reserved = 0, .device_ptr = DevicePointer(pointer), .stream = StreamHandle(stream)}));
  DeviceRanges::Get().Remove(DevicePointer(pointer));
  return absl::OkStatus();
}

void SayOnce(std::atomic<bool>& said, const char* what) {
  if (!said.exchange(true)) TALLY_LOG_WARN("tally: {} is not supported", what);
}

// Pinned device memory of device 0, without shareable handles: the pools Tally provides.
absl::Status CheckProps(const cudaMemPoolProps* props) {
  if (props == nullptr) return CudaError(cudaErrorInvalidValue, "null pool properties");
  if (props->allocType != cudaMemAllocationTypePinned ||
      props->location.type != cudaMemLocationTypeDevice) {
    return CudaError(cudaErrorInvalidValue, "a pool holds pinned device memory");
  }
  TALLY_RETURN_IF_ERROR(CheckDevice(props->location.id));
  if (props->handleTypes != cudaMemHandleTypeNone) {
    static std::atomic<bool> said{false};
    SayOnce(said, "a memory pool with shareable (IPC) handles");
    return CudaError(cudaErrorNotSupported, "memory pools with shareable handles");
  }
  return absl::OkStatus();
}

absl::Status CreatePool(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  TALLY_RETURN_IF_ERROR(CheckOut(pool));
  TALLY_RETURN_IF_ERROR(CheckProps(props));
  TALLY_ASSIGN_OR_RETURN(const uint64_t handle, CallForPool(ipc::MemPoolCreateRequest{}));
  *pool = ToPool(handle);
  return absl::OkStatus();
}

absl::Status GetPool(cudaMemPool_t* pool, int device, ipc::PoolKind kind) {
  TALLY_RETURN_IF_ERROR(CheckOut(pool));
  TALLY_RETURN_IF_ERROR(CheckDevice(device));
  TALLY_ASSIGN_OR_RETURN(const uint64_t handle, CallForPool(ipc::MemPoolGetRequest{.kind = kind}));
  *pool = ToPool(handle);
  return absl::OkStatus();
}

absl::Status SetCurrentPool(int device, cudaMemPool_t pool) {
  TALLY_RETURN_IF_ERROR(CheckDevice(device));
  return CallForNothing(ipc::MemPoolSetCurrentRequest{.reserved = 0, .pool = PoolHandle(pool)});
}

// The reuse flags are ints, the sizes cuuint64_t (CUDA Driver API, CUmemPool_attribute).
bool IsFlag(int attribute) { return attribute >= 1 && attribute <= 3; }

absl::Status SetAttribute(cudaMemPool_t pool, int attribute, const void* value) {
  if (value == nullptr) return CudaError(cudaErrorInvalidValue, "null attribute value");
  const uint64_t wide = IsFlag(attribute) ? static_cast<uint64_t>(*static_cast<const int*>(value))
                                          : *static_cast<const uint64_t*>(value);
  return CallForNothing(ipc::MemPoolSetAttributeRequest{
      .attribute = static_cast<uint32_t>(attribute), .pool = PoolHandle(pool), .value = wide});
}

absl::Status GetAttribute(cudaMemPool_t pool, int attribute, void* value) {
  TALLY_RETURN_IF_ERROR(CheckOut(value));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(
      auto answer, channel->Call(ipc::MemPoolGetAttributeRequest{
                       .attribute = static_cast<uint32_t>(attribute), .pool = PoolHandle(pool)}));
  if (IsFlag(attribute)) {
    *static_cast<int*>(value) = static_cast<int>(answer.fields.value);
  } else {
    *static_cast<uint64_t*>(value) = answer.fields.value;
  }
  return absl::OkStatus();
}

absl::Status Trim(cudaMemPool_t pool, size_t keep) {
  return CallForNothing(
      ipc::MemPoolTrimRequest{.reserved = 0, .pool = PoolHandle(pool), .keep_bytes = keep});
}

absl::Status DestroyPool(cudaMemPool_t pool) {
  return CallForNothing(ipc::MemPoolDestroyRequest{.reserved = 0, .pool = PoolHandle(pool)});
}

void** AsPointer(CUdeviceptr* address) { return reinterpret_cast<void**>(address); }
void* Pointer(CUdeviceptr address) { return reinterpret_cast<void*>(address); }

// cuMemAllocAsync of 0 bytes is CUDA_ERROR_INVALID_VALUE.
absl::Status DriverAllocate(CUdeviceptr* address, size_t size, uint64_t pool, CUstream stream) {
  if (size == 0) return CudaError(cudaErrorInvalidValue, "zero-byte stream-ordered allocation");
  return AllocateAsync(AsPointer(address), size, pool, stream);
}

}  // namespace

extern "C" {

cudaError_t cudaMallocAsync(void** pointer, size_t size, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return AllocateAsync(pointer, size, 0, stream); });
}

cudaError_t cudaMallocFromPoolAsync(void** pointer, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream) {
  return RuntimeCall(__func__, [&] {
    if (pool == nullptr) return CudaError(cudaErrorInvalidValue, "null memory pool");
    return AsRuntime(AllocateAsync(pointer, size, PoolHandle(pool), stream));
  });
}

cudaError_t cudaFreeAsync(void* pointer, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return FreeAsync(pointer, stream); });
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  return RuntimeCall(__func__, [&] { return CreatePool(pool, props); });
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  return RuntimeCall(__func__, [&] { return AsRuntime(DestroyPool(pool)); });
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  return RuntimeCall(__func__, [&] { return GetPool(pool, device, ipc::PoolKind::kDefault); });
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int device) {
  return RuntimeCall(__func__, [&] { return GetPool(pool, device, ipc::PoolKind::kCurrent); });
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool) {
  return RuntimeCall(__func__, [&] { return AsRuntime(SetCurrentPool(device, pool)); });
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value) {
  return RuntimeCall(__func__, [&] { return AsRuntime(SetAttribute(pool, attribute, value)); });
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value) {
  return RuntimeCall(__func__, [&] { return AsRuntime(GetAttribute(pool, attribute, value)); });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  return RuntimeCall(__func__, [&] { return AsRuntime(Trim(pool, keep)); });
}

// Driver API: CUmemoryPool is cudaMemPool_t, CUmemPoolProps cudaMemPoolProps (same layout and
// values), CUmemPool_attribute cudaMemPoolAttr.

CUresult cuMemAllocAsync(CUdeviceptr* address, size_t size, CUstream stream) {
  return DriverCall(__func__, [&] { return DriverAllocate(address, size, 0, stream); });
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t size, CUmemoryPool pool,
                                 CUstream stream) {
  return DriverCall(__func__, [&] {
    if (pool == nullptr) return CudaError(cudaErrorInvalidValue, "null memory pool");
    return DriverAllocate(address, size, PoolHandle(pool), stream);
  });
}

CUresult cuMemFreeAsync(CUdeviceptr address, CUstream stream) {
  return DriverCall(__func__, [&] { return FreeAsync(Pointer(address), stream); });
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  return DriverCall(
      __func__, [&] { return CreatePool(pool, reinterpret_cast<const cudaMemPoolProps*>(props)); });
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return DriverCall(__func__, [&] { return DestroyPool(pool); });
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice device) {
  return DriverCall(__func__, [&] { return GetPool(pool, device, ipc::PoolKind::kDefault); });
}

CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice device) {
  return DriverCall(__func__, [&] { return GetPool(pool, device, ipc::PoolKind::kCurrent); });
}

CUresult cuDeviceSetMemPool(CUdevice device, CUmemoryPool pool) {
  return DriverCall(__func__, [&] { return SetCurrentPool(device, pool); });
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
  return DriverCall(__func__, [&] { return SetAttribute(pool, attribute, value); });
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value) {
  return DriverCall(__func__, [&] { return GetAttribute(pool, attribute, value); });
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  return DriverCall(__func__, [&] { return Trim(pool, keep); });
}

}  // extern "C"
