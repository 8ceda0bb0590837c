// Page-locked host memory, mapped memory, managed memory, host registration and pointer
// attributes. Page-locked and managed blocks live in the host region that the server maps at the
// same address (client/host_blocks.h): the pointer the application gets is also the device
// pointer kernels use. Registered application memory stays invisible to the server.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>

#include "client/copy.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/host_blocks.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::CudaError;
using tally::client::DeviceRanges;
using tally::client::HostBlock;
using tally::client::HostBlockKind;
using tally::client::HostBlocks;
using tally::client::Run;

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

absl::Status DevicePointerOf(void** device, void* host, unsigned flags) {
  TALLY_RETURN_IF_ERROR(CheckOut(device));
  if (flags != 0) return CudaError(cudaErrorInvalidValue, "flags must be 0");
  const std::optional<HostBlock> block = HostBlocks::Get().Find(host);
  if (!block) return CudaError(cudaErrorInvalidValue, "not page-locked host memory");
  if (block->kind == HostBlockKind::kRegistered) {
    return CudaError(cudaErrorNotSupported,
                     "memory registered with cudaHostRegister cannot be mapped for the device "
                     "under Tally (the device is in the server process); allocate it with "
                     "cudaHostAlloc(cudaHostAllocMapped) instead");
  }
  *device = host;  // unified addressing: the same address in the server and for kernels
  return absl::OkStatus();
}

absl::Status FlagsOf(unsigned* flags, void* host) {
  TALLY_RETURN_IF_ERROR(CheckOut(flags));
  const std::optional<HostBlock> block = HostBlocks::Get().Find(host);
  if (!block || block->kind == HostBlockKind::kManaged) {
    return CudaError(cudaErrorInvalidValue, "not memory from cudaHostAlloc/cudaHostRegister");
  }
  *flags = block->flags;
  return absl::OkStatus();
}

cudaPointerAttributes Attributes(cudaMemoryType type, int device, void* device_pointer,
                                 void* host_pointer) {
  cudaPointerAttributes attributes{};
  attributes.type = type;
  attributes.device = device;
  attributes.devicePointer = device_pointer;
  attributes.hostPointer = host_pointer;
  return attributes;
}

// Answered locally: the shim knows every allocation of the process (CUDA Runtime API,
// cudaPointerGetAttributes; since CUDA 11 unregistered host memory is cudaMemoryTypeUnregistered).
cudaPointerAttributes AttributesOf(const void* pointer) {
  void* const address = const_cast<void*>(pointer);
  if (const std::optional<HostBlock> block = HostBlocks::Get().Find(pointer)) {
    const bool managed = block->kind == HostBlockKind::kManaged;
    const bool mapped = block->kind != HostBlockKind::kRegistered;
    return Attributes(managed ? cudaMemoryTypeManaged : cudaMemoryTypeHost, 0,
                      mapped ? address : nullptr, address);
  }
  if (DeviceRanges::Get().IsDevice(pointer)) {
    return Attributes(cudaMemoryTypeDevice, 0, address, nullptr);
  }
  return Attributes(cudaMemoryTypeUnregistered, cudaInvalidDeviceId, nullptr, address);
}

}  // namespace

extern "C" {

cudaError_t cudaMallocHost(void** pointer, size_t size) {
  return Run(__func__, [&] { return AllocatePinned(pointer, size, cudaHostAllocDefault); });
}

cudaError_t cudaHostAlloc(void** pointer, size_t size, unsigned int flags) {
  return Run(__func__, [&] { return AllocatePinned(pointer, size, flags); });
}

cudaError_t cudaFreeHost(void* pointer) {
  return Run(__func__, [&] { return FreePinned(pointer); });
}

cudaError_t cudaMallocManaged(void** pointer, size_t size, unsigned int flags) {
  return Run(__func__, [&] { return AllocateManaged(pointer, size, flags); });
}

cudaError_t cudaMemPrefetchAsync(const void* pointer, size_t count, cudaMemLocation,
                                 unsigned int flags, cudaStream_t) {
  return Run(__func__, [&]() -> absl::Status {
    if (flags != 0) return CudaError(cudaErrorInvalidValue, "flags must be 0");
    return CheckManagedRange(pointer, count);
  });
}

cudaError_t cudaMemAdvise(const void* pointer, size_t count, cudaMemoryAdvise, cudaMemLocation) {
  return Run(__func__, [&] { return CheckManagedRange(pointer, count); });
}

// length 0 means the whole allocation (CUDA Runtime API, cudaStreamAttachMemAsync).
cudaError_t cudaStreamAttachMemAsync(cudaStream_t, void* pointer, size_t length, unsigned int) {
  return Run(__func__, [&] { return CheckManagedRange(pointer, length == 0 ? 1 : length); });
}

cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  return Run(__func__, [&] { return DevicePointerOf(device, host, flags); });
}

cudaError_t cudaHostGetFlags(unsigned int* flags, void* host) {
  return Run(__func__, [&] { return FlagsOf(flags, host); });
}

// Tracked only: copies from and to it work (staged like pageable memory), the device cannot use
// it (see DevicePointerOf).
cudaError_t cudaHostRegister(void* pointer, size_t size, unsigned int flags) {
  return Run(__func__, [&] { return HostBlocks::Get().Register(pointer, size, flags); });
}

cudaError_t cudaHostUnregister(void* pointer) {
  return Run(__func__, [&] { return HostBlocks::Get().Unregister(pointer); });
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer) {
  return Run(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(attributes));
    *attributes = AttributesOf(pointer);
    return absl::OkStatus();
  });
}

}  // extern "C"
