// Exports the virtual memory management entry points (CUDA driver API, "Virtual Memory
// Management"; internal/virtual_memory.h): reservations, cuMemCreate allocations, mappings and
// access. Every error the documentation lists for a bad argument is CUDA_ERROR_INVALID_VALUE
// (unknown handles too), except a device other than 0 (INVALID_DEVICE) and features the emulated
// device lacks (shareable handles, host locations, GPUDirect RDMA, tile pools: NOT_SUPPORTED).
#include <cuda.h>

#include "emulator/internal/entry.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::MemoryAccess;
using tally::emu::Run;
using tally::emu::VirtualMemory;

namespace tally::emu {
namespace {

// A location that the device's memory may be placed at or accessed from: a device ordinal
// (TALLY_EMU_DEVICE_COUNT; all of them are views of the one emulated device).
absl::Status CheckLocation(const Driver& driver, const CUmemLocation& location) {
  switch (location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return driver.CheckDevice(location.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      // CU_DEVICE_ATTRIBUTE_HOST_(NUMA_)VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED are 0.
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "host locations are not supported");
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown or unusable location type");
  }
}

// cuMemCreate's properties (also those cuMemGetAllocationGranularity is asked about).
absl::Status CheckProperties(const Driver& driver, const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null properties");
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "type must be CU_MEM_ALLOCATION_TYPE_PINNED");
  }
  TALLY_RETURN_IF_ERROR(CheckLocation(driver, prop->location));
  constexpr unsigned kHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                    CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT |
                                    CU_MEM_HANDLE_TYPE_FABRIC;
  const unsigned handle_types = static_cast<unsigned>(prop->requestedHandleTypes);
  if ((handle_types & ~kHandleTypes) != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown requested handle types");
  }
  if (handle_types != 0) {  // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_*_SUPPORTED are 0
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "shareable handles are not supported");
  }
  // "In all other cases [than CU_MEM_HANDLE_TYPE_WIN32], this field is required to be zero."
  if (prop->win32HandleMetaData != nullptr) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "win32HandleMetaData must be null");
  }
  if (prop->allocFlags.gpuDirectRDMACapable != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "GPUDirect RDMA is not supported");
  }
  const unsigned usage = prop->allocFlags.usage;
  if ((usage & ~(CU_MEM_CREATE_USAGE_TILE_POOL | CU_MEM_CREATE_USAGE_HW_DECOMPRESS)) != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown usage flags");
  }
  if (usage != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED, "tile pools and decompression are not supported");
  }
  // compressionType is a hint ("applications are expected to query [...] if the obtained
  // allocation is compressible"): the allocation is not.
  return absl::OkStatus();
}

absl::StatusOr<MemoryAccess> AccessOf(CUmemAccess_flags flags) {
  switch (flags) {
    case CU_MEM_ACCESS_FLAGS_PROT_NONE:
      return MemoryAccess::kNone;
    case CU_MEM_ACCESS_FLAGS_PROT_READ:
      return MemoryAccess::kRead;
    case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
      return MemoryAccess::kReadWrite;
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown access flags");
  }
}

// The access that `count` descriptors give the device (the last one for it wins).
absl::StatusOr<MemoryAccess> DeviceAccess(const Driver& driver, const CUmemAccessDesc* desc,
                                          size_t count) {
  if (desc == nullptr || count == 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "no access descriptors");
  }
  MemoryAccess access = MemoryAccess::kNone;
  for (size_t i = 0; i < count; ++i) {
    // Only device 0's memory exists, so a host location can be given no access to it either.
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "access can be set for device 0 only");
    }
    TALLY_RETURN_IF_ERROR(CheckLocation(driver, desc[i].location));
    TALLY_ASSIGN_OR_RETURN(access, AccessOf(desc[i].flags));
  }
  return access;
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(granularity));
    TALLY_RETURN_IF_ERROR(tally::emu::CheckProperties(driver, prop));
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown granularity option");
    }
    *granularity = VirtualMemory::kGranularity;
    return absl::OkStatus();
  });
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(ptr));
    if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    TALLY_ASSIGN_OR_RETURN(*ptr, driver.virtual_memory().Reserve(size, alignment, addr));
    return absl::OkStatus();
  });
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return Run([&](Driver& driver) { return driver.virtual_memory().Free(ptr, size); });
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(handle));
    if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    TALLY_RETURN_IF_ERROR(tally::emu::CheckProperties(driver, prop));
    TALLY_ASSIGN_OR_RETURN(*handle, driver.virtual_memory().Create(size));
    return absl::OkStatus();
  });
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return Run([&](Driver& driver) { return driver.virtual_memory().Release(handle); });
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  return Run([&](Driver& driver) -> absl::Status {
    if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be 0");
    return driver.virtual_memory().Map(ptr, size, offset, handle);
  });
}

// \note_sync: like cuMemFree, waits for the device's queued work, which may still use the range.
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return Run([&](Driver& driver) {
    driver.SynchronizeDevice();
    return driver.virtual_memory().Unmap(ptr, size);
  });
}

// \note_sync: work queued before a call that takes access away still runs with the old access
// (the device's queued work is waited for first); granting access needs no wait.
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(MemoryAccess access, tally::emu::DeviceAccess(driver, desc, count));
    VirtualMemory& memory = driver.virtual_memory();
    bool reduced = false;
    TALLY_RETURN_IF_ERROR(memory.SetAccess(ptr, size, access, false, &reduced));
    if (reduced) driver.SynchronizeDevice();
    return memory.SetAccess(ptr, size, access, true, &reduced);
  });
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    if (location == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null location");
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "access is kept for device 0 only");
    }
    TALLY_RETURN_IF_ERROR(tally::emu::CheckLocation(driver, *location));
    TALLY_ASSIGN_OR_RETURN(MemoryAccess access, driver.virtual_memory().GetAccess(ptr));
    constexpr CUmemAccess_flags kFlags[] = {CU_MEM_ACCESS_FLAGS_PROT_NONE,
                                            CU_MEM_ACCESS_FLAGS_PROT_READ,
                                            CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    *flags = kFlags[static_cast<int>(access)];
    return absl::OkStatus();
  });
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(handle));
    TALLY_ASSIGN_OR_RETURN(*handle,
                           driver.virtual_memory().Retain(reinterpret_cast<uint64_t>(addr)));
    return absl::OkStatus();
  });
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(prop));
    TALLY_RETURN_IF_ERROR(driver.virtual_memory().AllocationSize(handle).status());
    *prop = CUmemAllocationProp{};  // not compressible, no shareable handles, no usage flags
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    prop->location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    return absl::OkStatus();
  });
}

}  // extern "C"
