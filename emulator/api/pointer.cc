// Exports cuPointerGetAttribute and cuPointerGetAttributes: what the allocation table knows about
// an address. With unified addressing every tracked pointer is both its device and (for memory
// the host can reach) its host address.
#include <cuda.h>
#include <fmt/format.h>

#include <cstring>

#include "emulator/internal/entry.h"

using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

// Writes `value` to the caller's buffer of the attribute's documented type.
template <typename T>
absl::Status Store(void* data, T value) {
  if (data == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null attribute output");
  std::memcpy(data, &value, sizeof(T));
  return absl::OkStatus();
}

// Size of the documented output type of the attributes this file supports (0: unsupported).
// Booleans are written as int, as libcuda does.
size_t AttributeSize(CUpointer_attribute attribute) {
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return sizeof(unsigned);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      return sizeof(void*);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      return sizeof(int);
    default:
      return 0;
  }
}

absl::Status GetAttribute(Driver& driver, void* data, CUpointer_attribute attribute,
                          CUdeviceptr pointer) {
  if (AttributeSize(attribute) == 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, fmt::format("pointer attribute {} is not supported",
                                                           static_cast<int>(attribute)));
  }
  std::optional<Allocation> allocation = driver.memory().Find(pointer);
  if (!allocation) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "pointer is not in any CUDA allocation");
  }
  bool host_side = allocation->kind == AllocationKind::kHostPinned ||
                   allocation->kind == AllocationKind::kHostRegistered;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: {
      uint64_t owner = allocation->owner;
      auto context = driver.contexts().FindIf([&](const Context& c) { return c.id() == owner; });
      if (context == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "owner context is gone");
      return Store(data, context->handle());
    }
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return Store(data,
                   static_cast<unsigned>(host_side ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE));
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
      return Store(data, pointer);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (allocation->kind == AllocationKind::kDevice ||
          allocation->kind == AllocationKind::kMapped) {
        return CudaError(CUDA_ERROR_INVALID_VALUE, "device memory has no host address");
      }
      return Store(data, reinterpret_cast<void*>(pointer));
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      return Store(data, static_cast<unsigned long long>(allocation->buffer_id));
    // "Not necessarily the address of the mapped region, but the address of the mappable address
    // range ptr references (e.g. from cuMemAddressReserve)": a mapping's reservation.
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      return Store(data,
                   static_cast<CUdeviceptr>(allocation->range_size != 0 ? allocation->range_base
                                                                        : allocation->base));
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      return Store(data, static_cast<size_t>(allocation->range_size != 0 ? allocation->range_size
                                                                         : allocation->size));
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      return Store(data, static_cast<CUdeviceptr>(allocation->base));
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      return Store(data, static_cast<size_t>(allocation->size));
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:  // synchronous copies always synchronise here
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return Store(data, 1);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      return Store(data, allocation->kind == AllocationKind::kManaged ? 1 : 0);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:  // no IPC handles in the emulator
      return Store(data, 0);
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE, "unsupported pointer attribute");
  }
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
    return tally::emu::GetAttribute(driver, data, attribute, ptr);
  });
}

// "Unlike cuPointerGetAttribute, this function will not return an error when the ptr encountered
// is not a valid CUDA pointer. Instead, the attributes are assigned default NULL values": so is
// an attribute that does not apply to the pointer (the host pointer of device memory).
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());
    if (numAttributes == 0 || attributes == nullptr || data == nullptr) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "no attributes requested");
    }
    for (unsigned i = 0; i < numAttributes; ++i) {
      size_t size = tally::emu::AttributeSize(attributes[i]);
      if (size == 0 || data[i] == nullptr) {
        return CudaError(CUDA_ERROR_INVALID_VALUE,
                         fmt::format("attribute {} is unsupported or has no output", i));
      }
      absl::Status status = tally::emu::GetAttribute(driver, data[i], attributes[i], ptr);
      if (status.code() == absl::StatusCode::kOk) continue;
      if (tally::emu::ToCuResult(status) != CUDA_ERROR_INVALID_VALUE) return status;
      std::memset(data[i], 0, size);
    }
    return absl::OkStatus();
  });
}

}  // extern "C"
