// Exports allocation entry points: device, managed, pinned and registered host memory, and the
// address-range and capacity queries.
#include <cuda.h>

#include "emulator/internal/entry.h"
#include "emulator/internal/submit.h"

using tally::emu::AllocationKind;
using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::KindBit;
using tally::emu::Run;

namespace tally::emu {
namespace {

absl::Status AllocateArena(Driver& driver, CUdeviceptr* dptr, size_t bytesize,
                           AllocationKind kind) {
  TALLY_RETURN_IF_ERROR(CheckOut(dptr));
  TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
  TALLY_ASSIGN_OR_RETURN(*dptr, driver.memory().Allocate(bytesize, kind, context->id()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return Run([&](Driver& driver) {
    return tally::emu::AllocateArena(driver, dptr, bytesize, AllocationKind::kDevice);
  });
}

// Managed memory is arena memory too: the host can dereference it directly, which is exactly
// what CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST promises.
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return Run([&](Driver& driver) -> absl::Status {
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "flags must be CU_MEM_ATTACH_GLOBAL or _HOST");
    }
    return tally::emu::AllocateArena(driver, dptr, bytesize, AllocationKind::kManaged);
  });
}

// Frees after the current context's queued work is done, so that no copy or kernel still in
// flight touches the memory (cudaFree likewise synchronises implicitly).
// Stream-ordered allocation (CUDA Driver API, "Stream Ordered Memory Allocator") from the
// device's default pool: the memory is allocated at once, which satisfies "usable by work
// ordered after the allocation", and returned once the stream reaches the free.
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(driver.ResolveStream(hStream).status());
    return tally::emu::AllocateArena(driver, dptr, bytesize, AllocationKind::kDevice);
  });
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return Run([&](Driver& driver) -> absl::Status {
    const auto allocation = driver.memory().Find(dptr);
    if (!allocation || allocation->base != dptr || allocation->kind != AllocationKind::kDevice) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "not the start of a device allocation");
    }
    tally::emu::DeviceMemory* memory = &driver.memory();
    return tally::emu::Submit(
        driver, hStream,
        [memory, dptr] {
          memory->Release(dptr, KindBit(AllocationKind::kDevice), CUDA_ERROR_INVALID_VALUE)
              .IgnoreError();  // checked at the call; a double free is the caller's race
        },
        false);
  });
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    if (dptr == 0) return absl::OkStatus();
    context->Synchronize();
    return driver.memory().Release(
        dptr, KindBit(AllocationKind::kDevice) | KindBit(AllocationKind::kManaged),
        CUDA_ERROR_INVALID_VALUE);
  });
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(CheckOut(free));
    TALLY_RETURN_IF_ERROR(CheckOut(total));
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
    *total = driver.memory().capacity();
    *free = *total - driver.memory().used();
    return absl::OkStatus();
  });
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  return Run([&](Driver& driver) {
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
    auto allocation = driver.memory().Find(dptr);
    if (!allocation) return CudaError(CUDA_ERROR_NOT_FOUND, "address is not in an allocation");
    if (pbase != nullptr) *pbase = allocation->base;
    if (psize != nullptr) *psize = allocation->size;
    return absl::OkStatus();
  });
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pp));
    constexpr unsigned kKnown =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if ((Flags & ~kKnown) != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    TALLY_ASSIGN_OR_RETURN(*pp, driver.memory().AllocateHost(bytesize, Flags, context->id()));
    return absl::OkStatus();
  });
}

CUresult cuMemFreeHost(void* p) {
  return Run([&](Driver& driver) {
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    context->Synchronize();
    return driver.memory().Release(reinterpret_cast<uint64_t>(p),
                                   KindBit(AllocationKind::kHostPinned), CUDA_ERROR_INVALID_VALUE);
  });
}

CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return Run([&](Driver& driver) -> absl::Status {
    constexpr unsigned kKnown = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if ((Flags & ~kKnown) != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "unknown flags");
    if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) {
      return CudaError(CUDA_ERROR_NOT_SUPPORTED, "I/O memory cannot be registered");
    }
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    return driver.memory().RegisterHost(p, bytesize, Flags, context->id());
  });
}

CUresult cuMemHostUnregister(void* p) {
  return Run([&](Driver& driver) {
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    context->Synchronize();
    return driver.memory().Release(reinterpret_cast<uint64_t>(p),
                                   KindBit(AllocationKind::kHostRegistered),
                                   CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  });
}

// With unified addressing the device pointer of mapped host memory is the host pointer.
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pdptr));
    if (Flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "Flags must be 0");
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
    auto allocation = driver.memory().Find(reinterpret_cast<uint64_t>(p));
    if (!allocation || (allocation->kind != AllocationKind::kHostPinned &&
                        allocation->kind != AllocationKind::kHostRegistered)) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "not page-locked host memory");
    }
    *pdptr = reinterpret_cast<CUdeviceptr>(p);
    return absl::OkStatus();
  });
}

}  // extern "C"
