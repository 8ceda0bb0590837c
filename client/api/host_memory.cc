// Page-locked host memory, mapped memory, managed memory, host registration and pointer
// attributes. Page-locked and managed blocks live in the host region that the server maps at the
// same address (client/host_blocks.h): the pointer the application gets is also the device
// pointer kernels use. Registered application memory is mapped for the device at another
// address, its host-region alias. The driver API's forms (cuMemHostAlloc, cuPointerGetAttribute,
// ...) share each runtime function's code.
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuMemHostRegister and cuMemHostRegister_v2 apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"
#include "client/copy.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/host_blocks.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DeviceRange;
using tally::client::DeviceRanges;
using tally::client::DriverError;
using tally::client::HostBlock;
using tally::client::HostBlockKind;
using tally::client::HostBlocks;
using tally::client::PrimaryContext;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
using tally::client::UnmappedReason;

namespace {

absl::Status AllocateHost(void** pointer, size_t size, HostBlockKind kind, unsigned flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(pointer));
  TALLY_ASSIGN_OR_RETURN(*pointer, HostBlocks::Get().Allocate(size, kind, flags));
  return absl::OkStatus();
}

// Every flag is honoured by what the memory already is: mapped (with unified addressing all
// page-locked memory is), portable (there is one device), write-combined (a hint). The driver's
// CU_MEMHOSTALLOC_* flags have the same values. 0 bytes give a null pointer, as cudaMalloc's do.
absl::Status AllocatePinned(void** pointer, size_t size, unsigned flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(pointer));
  constexpr unsigned kKnown =
      cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kKnown) != 0)
    return CudaError(cudaErrorInvalidValue, "unknown cudaHostAlloc flags");
  if (size == 0) {
    *pointer = nullptr;
    return absl::OkStatus();
  }
  return AllocateHost(pointer, size, HostBlockKind::kPinned, flags);
}

absl::Status FreePinned(void* pointer) {
  if (pointer == nullptr) return absl::OkStatus();
  return HostBlocks::Get().Free(pointer, HostBlockKind::kPinned);
}

// Managed memory is host-region memory that kernels access in place: coherent for host and
// device at one address, without page migration (as on devices without concurrent managed
// access, the host must not touch it while kernels using it run).
absl::Status AllocateManaged(void** pointer, size_t size, unsigned flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) {
    return CudaError(cudaErrorInvalidValue, "flags must be cudaMemAttachGlobal or Host");
  }
  if (size == 0) return CudaError(cudaErrorInvalidValue, "managed allocation of 0 bytes");
  return AllocateHost(pointer, size, HostBlockKind::kManaged, flags);
}

// Hints about managed memory need no action: it always lives in host memory that the device
// accesses in place, so there is nothing to migrate or attach. The range is still checked.
absl::Status CheckManagedRange(const void* pointer, size_t count) {
  const std::optional<HostBlock> block = HostBlocks::Get().Find(pointer);
  const bool inside = block && block->kind == HostBlockKind::kManaged &&
                      count <= block->size - (reinterpret_cast<uintptr_t>(pointer) - block->base);
  if (inside) return absl::OkStatus();
  return CudaError(cudaErrorInvalidValue, "not a range of memory from cudaMallocManaged");
}

absl::Status RegisteredNotMapped(const HostBlock& block) {
  return CudaError(
      cudaErrorNotSupported,
      absl::StrFormat("memory registered with cudaHostRegister at %p cannot be mapped "
                      "for the device under Tally: %s; allocate it with "
                      "cudaHostAlloc(cudaHostAllocMapped) instead",
                      reinterpret_cast<void*>(block.base), UnmappedReason(block.unmapped)));
}

// A registration is one memory at two addresses: the application's and the device's.
bool InDeviceView(const HostBlock& block, uintptr_t address) {
  return block.kind == HostBlockKind::kRegistered && address - block.base >= block.size;
}

// Page-locked and managed memory is mapped at its own address (unified addressing); registered
// memory at its device alias (cudaDevAttrCanUseHostPointerForRegisteredMem is 0 under Tally:
// the device pointer differs from the host pointer, as cudaHostGetDevicePointer allows).
absl::Status DevicePointerOf(void** device, void* host, unsigned flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(device));
  if (flags != 0) return CudaError(cudaErrorInvalidValue, "flags must be 0");
  const std::optional<HostBlock> block = HostBlocks::Get().Find(host);
  if (!block) return CudaError(cudaErrorInvalidValue, "not page-locked host memory");
  const auto address = reinterpret_cast<uintptr_t>(host);
  if (block->kind != HostBlockKind::kRegistered || InDeviceView(*block, address)) {
    *device = host;
    return absl::OkStatus();
  }
  if (block->device == 0) return RegisteredNotMapped(*block);
  *device = reinterpret_cast<void*>(block->device + (address - block->base));
  return absl::OkStatus();
}

// Only memory from cudaHostAlloc (and cuMemHostAlloc) has flags to report (CUDA Runtime API,
// cudaHostGetFlags: "will fail if the input pointer does not reside in an address range
// allocated by cudaHostAlloc()").
absl::Status FlagsOf(unsigned* flags, void* host) {
  TALLY_RETURN_IF_ERROR(CheckOut(flags));
  const std::optional<HostBlock> block = HostBlocks::Get().Find(host);
  if (!block || block->kind != HostBlockKind::kPinned) {
    return CudaError(cudaErrorInvalidValue, "not memory from cudaHostAlloc");
  }
  *flags = block->flags;
  return absl::OkStatus();
}

// What the shim knows of an address: the process's allocations, host blocks and variables.
enum class PointerKind { kUnknown, kDevice, kPinned, kManaged, kRegistered };

struct PointerInfo {
  PointerKind kind = PointerKind::kUnknown;
  uintptr_t base = 0;  // of the allocation containing the address, in the address's view
  size_t size = 0;
  uint64_t buffer_id = 0;
  // What to add to the address for the device's and the host's view of it (a registration's
  // two addresses); has_device is false for registered memory that is not mapped.
  intptr_t to_device = 0, to_host = 0;
  bool has_device = true;
};

PointerInfo Classify(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  if (const std::optional<HostBlock> block = HostBlocks::Get().Find(pointer)) {
    const PointerKind kind = block->kind == HostBlockKind::kManaged  ? PointerKind::kManaged
                             : block->kind == HostBlockKind::kPinned ? PointerKind::kPinned
                                                                     : PointerKind::kRegistered;
    PointerInfo info{kind, block->base, block->size, block->buffer_id};
    if (kind == PointerKind::kRegistered) {
      const auto delta = static_cast<intptr_t>(block->device - block->base);
      if (InDeviceView(*block, address)) {
        info.base = block->device;
        info.to_host = -delta;
      } else {
        info.to_device = delta;
        info.has_device = block->device != 0;
      }
    }
    return info;
  }
  if (const std::optional<DeviceRange> range = DeviceRanges::Get().Find(pointer)) {
    return {PointerKind::kDevice, range->base, range->size, range->buffer_id};
  }
  return {};
}

bool IsHost(PointerKind kind) {
  return kind == PointerKind::kPinned || kind == PointerKind::kRegistered;
}
bool DeviceReaches(const PointerInfo& info) {
  return info.kind != PointerKind::kUnknown && info.has_device;
}
bool HostReaches(PointerKind kind) {
  return kind != PointerKind::kUnknown && kind != PointerKind::kDevice;
}
void* DeviceView(const void* pointer, const PointerInfo& info) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(pointer) + info.to_device);
}
void* HostView(const void* pointer, const PointerInfo& info) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(pointer) + info.to_host);
}

// Answered locally: the shim knows every allocation of the process (CUDA Runtime API,
// cudaPointerGetAttributes; since CUDA 11 unregistered host memory is cudaMemoryTypeUnregistered).
cudaPointerAttributes AttributesOf(const void* pointer) {
  void* const address = const_cast<void*>(pointer);
  const PointerInfo info = Classify(pointer);
  cudaPointerAttributes attributes{};
  attributes.type = info.kind == PointerKind::kUnknown   ? cudaMemoryTypeUnregistered
                    : info.kind == PointerKind::kManaged ? cudaMemoryTypeManaged
                    : IsHost(info.kind)                  ? cudaMemoryTypeHost
                                                         : cudaMemoryTypeDevice;
  attributes.device = info.kind == PointerKind::kUnknown ? cudaInvalidDeviceId : 0;
  attributes.devicePointer = DeviceReaches(info) ? DeviceView(address, info) : nullptr;
  attributes.hostPointer = info.kind == PointerKind::kDevice ? nullptr : HostView(address, info);
  return attributes;
}

template <typename T>
void Store(void* data, T value) {
  std::memcpy(data, &value, sizeof(T));
}

// Writes `attribute` of `pointer` to `data` in the type cuPointerGetAttribute documents for it
// (booleans as unsigned int), or that type's zero (cudaInvalidDeviceId for the ordinal) where the
// pointer has no such value, which it reports by returning false. Attributes of what Tally does
// not provide (P2P tokens, GPUDirect RDMA, IPC and shareable handles, virtual memory mappings)
// are CUDA_ERROR_NOT_SUPPORTED.
absl::StatusOr<bool> StoreAttribute(void* data, CUpointer_attribute attribute, const void* pointer,
                                    const PointerInfo& info) {
  const bool known = info.kind != PointerKind::kUnknown;
  const auto flag = [&](bool value) {
    Store(data, static_cast<unsigned int>(value));
    return known;
  };
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      Store(data, known ? PrimaryContext() : CUcontext{});
      return known;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:  // managed memory is device memory to the driver
      Store(data, static_cast<unsigned int>(!known              ? 0
                                            : IsHost(info.kind) ? CU_MEMORYTYPE_HOST
                                                                : CU_MEMORYTYPE_DEVICE));
      return known;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
      const bool reaches = DeviceReaches(info);
      Store(data, reaches ? reinterpret_cast<CUdeviceptr>(DeviceView(pointer, info)) : 0);
      return reaches;
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
      const bool reaches = HostReaches(info.kind);
      Store(data, reaches ? HostView(pointer, info) : nullptr);
      return reaches;
    }
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:  // never set: cuPointerSetAttribute is not provided
      return flag(false);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      Store(data, static_cast<unsigned long long>(info.buffer_id));
      return known;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return flag(info.kind == PointerKind::kManaged);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      Store(data, known ? 0 : static_cast<int>(cudaInvalidDeviceId));
      return known;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      return flag(false);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      Store(data, static_cast<CUdeviceptr>(info.base));
      return known;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      Store(data, info.size);
      return known;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return flag(DeviceReaches(info));
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:  // no memory comes from a pool
      Store(data, CUmemoryPool{});
      return known;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      return DriverError(CUDA_ERROR_NOT_SUPPORTED, "pointer attribute not provided by Tally");
  }
  return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUpointer_attribute");
}

// cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE for an address CUDA does not know, or one that
// has no such value (a device pointer's host pointer).
absl::Status PointerAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr address) {
  TALLY_RETURN_IF_ERROR(CheckOut(data));
  const void* const pointer = reinterpret_cast<const void*>(address);
  const PointerInfo info = Classify(pointer);
  if (info.kind == PointerKind::kUnknown) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "not memory allocated or registered with CUDA");
  }
  if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && !DeviceReaches(info)) {
    const std::optional<HostBlock> block = HostBlocks::Get().Find(pointer);
    if (block) return RegisteredNotMapped(*block);
  }
  TALLY_ASSIGN_OR_RETURN(const bool stored, StoreAttribute(data, attribute, pointer, info));
  if (!stored) return DriverError(CUDA_ERROR_INVALID_VALUE, "the pointer has no such value");
  return absl::OkStatus();
}

// cuPointerGetAttributes: unlike cuPointerGetAttribute, an unknown address or a missing value
// gets the attribute's zero, not an error (CUDA Driver API, cuPointerGetAttributes).
absl::Status PointerAttributes(unsigned count, const CUpointer_attribute* attributes, void** data,
                               CUdeviceptr address) {
  if (count > 0 && (attributes == nullptr || data == nullptr)) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "null attribute or data array");
  }
  const void* const pointer = reinterpret_cast<const void*>(address);
  const PointerInfo info = Classify(pointer);
  for (unsigned i = 0; i < count; ++i) {
    TALLY_RETURN_IF_ERROR(CheckOut(data[i]));
    TALLY_RETURN_IF_ERROR(StoreAttribute(data[i], attributes[i], pointer, info).status());
  }
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaMallocHost(void** pointer, size_t size) {
  return RuntimeCall(__func__, [&] { return AllocatePinned(pointer, size, cudaHostAllocDefault); });
}

cudaError_t cudaHostAlloc(void** pointer, size_t size, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return AllocatePinned(pointer, size, flags); });
}

cudaError_t cudaFreeHost(void* pointer) {
  return RuntimeCall(__func__, [&] { return FreePinned(pointer); });
}

cudaError_t cudaMallocManaged(void** pointer, size_t size, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return AllocateManaged(pointer, size, flags); });
}

cudaError_t cudaMemPrefetchAsync(const void* pointer, size_t count, cudaMemLocation,
                                 unsigned int flags, cudaStream_t) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    if (flags != 0) return CudaError(cudaErrorInvalidValue, "flags must be 0");
    return CheckManagedRange(pointer, count);
  });
}

cudaError_t cudaMemAdvise(const void* pointer, size_t count, cudaMemoryAdvise, cudaMemLocation) {
  return RuntimeCall(__func__, [&] { return CheckManagedRange(pointer, count); });
}

// length 0 means the whole allocation (CUDA Runtime API, cudaStreamAttachMemAsync).
cudaError_t cudaStreamAttachMemAsync(cudaStream_t, void* pointer, size_t length, unsigned int) {
  return RuntimeCall(__func__,
                     [&] { return CheckManagedRange(pointer, length == 0 ? 1 : length); });
}

cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return DevicePointerOf(device, host, flags); });
}

cudaError_t cudaHostGetFlags(unsigned int* flags, void* host) {
  return RuntimeCall(__func__, [&] { return FlagsOf(flags, host); });
}

// Mapped for the device at its host-region alias (host_blocks.h, DevicePointerOf); copies with
// the application's pointer are staged like pageable ones, copies with the alias are not.
cudaError_t cudaHostRegister(void* pointer, size_t size, unsigned int flags) {
  return RuntimeCall(__func__, [&] { return HostBlocks::Get().Register(pointer, size, flags); });
}

cudaError_t cudaHostUnregister(void* pointer) {
  return RuntimeCall(__func__, [&] { return HostBlocks::Get().Unregister(pointer); });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(attributes));
    *attributes = AttributesOf(pointer);
    return absl::OkStatus();
  });
}

// Driver API (CUDA Driver API, "Memory Management", "Unified Addressing"). The CU_MEMHOSTALLOC_*,
// CU_MEMHOSTREGISTER_* and CU_MEM_ATTACH_* flags have the runtime flags' values.

CUresult cuMemHostAlloc(void** pointer, size_t size, unsigned int flags) {
  return DriverCall(__func__, [&] { return AllocatePinned(pointer, size, flags); });
}

CUresult cuMemAllocHost_v2(void** pointer, size_t size) {
  return DriverCall(__func__, [&] { return AllocatePinned(pointer, size, 0); });
}

CUresult cuMemFreeHost(void* pointer) {
  return DriverCall(__func__, [&] { return FreePinned(pointer); });
}

CUresult cuMemAllocManaged(CUdeviceptr* address, size_t size, unsigned int flags) {
  return DriverCall(
      __func__, [&] { return AllocateManaged(reinterpret_cast<void**>(address), size, flags); });
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device, void* host, unsigned int flags) {
  return DriverCall(__func__,
                    [&] { return DevicePointerOf(reinterpret_cast<void**>(device), host, flags); });
}

CUresult cuMemHostGetFlags(unsigned int* flags, void* host) {
  return DriverCall(__func__, [&] { return FlagsOf(flags, host); });
}

CUresult cuMemHostRegister_v2(void* pointer, size_t size, unsigned int flags) {
  return DriverCall(__func__, [&] { return HostBlocks::Get().Register(pointer, size, flags); });
}

CUresult cuMemHostRegister(void* pointer, size_t size, unsigned int flags) {
  return cuMemHostRegister_v2(pointer, size, flags);
}

CUresult cuMemHostUnregister(void* pointer) {
  return DriverCall(__func__, [&] { return HostBlocks::Get().Unregister(pointer); });
}

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  return DriverCall(__func__, [&] { return PointerAttribute(data, attribute, pointer); });
}

CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr pointer) {
  return DriverCall(__func__, [&] { return PointerAttributes(count, attributes, data, pointer); });
}

}  // extern "C"
