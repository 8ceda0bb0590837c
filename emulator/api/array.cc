// Exports cuArrayCreate, cuArray3DCreate, cuArrayDestroy and the descriptor queries, and resolves
// array endpoints of cuMemcpy2D/3D. Layered, cubemap, sparse and other special arrays are
// refused with CUDA_ERROR_NOT_SUPPORTED.
#include <cuda.h>
#include <fmt/format.h>

#include "emulator/internal/entry.h"
#include "emulator/internal/memory_layout.h"
#include "emulator/internal/texture.h"

using tally::emu::CheckOut;
using tally::emu::CudaArray;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

// Maximum extents of sm_80 (CUDA C++ Programming Guide, "Technical Specifications").
constexpr uint64_t kMax1D = 131072, kMax2D = 65536, kMax3D = 16384;

absl::Status CreateArray(Driver& driver, CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR& desc) {
  TALLY_RETURN_IF_ERROR(CheckOut(handle));
  TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
  TALLY_RETURN_IF_ERROR(CheckFormat(desc.Format, desc.NumChannels));
  if ((desc.Flags & ~unsigned{CUDA_ARRAY3D_SURFACE_LDST}) != 0) {
    return CudaError(CUDA_ERROR_NOT_SUPPORTED,
                     fmt::format("array flags {:#x} are not supported", desc.Flags));
  }
  if (desc.Width == 0 || (desc.Height == 0 && desc.Depth != 0)) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "array width is 0, or depth without height");
  }
  const bool three_d = desc.Depth != 0, two_d = desc.Height != 0;
  const uint64_t limit = three_d ? kMax3D : two_d ? kMax2D : kMax1D;
  if (desc.Width > limit || desc.Height > limit || desc.Depth > limit) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "array extent above the device's limit");
  }
  auto array = std::make_shared<CudaArray>();
  array->desc = desc;
  array->element_bytes = ChannelBytes(desc.Format) * desc.NumChannels;
  array->width = desc.Width;
  array->height = two_d ? desc.Height : 1;
  array->depth = three_d ? desc.Depth : 1;
  array->owner = context->id();
  const uint64_t bytes = array->slice() * array->depth;
  if (bytes > driver.memory().capacity() - driver.memory().used()) {
    return CudaError(CUDA_ERROR_OUT_OF_MEMORY, "array larger than the free device memory");
  }
  array->storage.assign(bytes, 0);
  *handle = driver.arrays().Insert(std::move(array));
  return absl::OkStatus();
}

CUDA_ARRAY3D_DESCRIPTOR From2D(const CUDA_ARRAY_DESCRIPTOR* desc) {
  CUDA_ARRAY3D_DESCRIPTOR full{};
  full.Width = desc->Width;
  full.Height = desc->Height;
  full.Format = desc->Format;
  full.NumChannels = desc->NumChannels;
  return full;
}

}  // namespace

absl::StatusOr<PitchedRegion> ArrayRegion(Driver& driver, CUarray handle, uint64_t x_bytes,
                                          uint64_t y, uint64_t z, const CopyExtent& extent) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<CudaArray> array, driver.arrays().Lookup(handle));
  if (x_bytes % array->element_bytes != 0 || extent.width_bytes % array->element_bytes != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "array offsets and widths are whole elements");
  }
  if (x_bytes > array->pitch() || extent.width_bytes > array->pitch() - x_bytes ||
      y > array->height || extent.height > array->height - y || z > array->depth ||
      extent.depth > array->depth - z) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "copy exceeds the array's extent");
  }
  PitchedRegion region;
  region.pitch = array->pitch();
  region.slice = array->slice();
  // The array outlives the copy: cuArrayDestroy waits for the context's queued work.
  region.base = reinterpret_cast<uint64_t>(array->storage.data()) + z * region.slice +
                y * region.pitch + x_bytes;
  return region;
}

}  // namespace tally::emu

extern "C" {

CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray) {
  return Run([&](Driver& driver) -> absl::Status {
    if (pAllocateArray == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null descriptor");
    return tally::emu::CreateArray(driver, pHandle, tally::emu::From2D(pAllocateArray));
  });
}

CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray) {
  return Run([&](Driver& driver) -> absl::Status {
    if (pAllocateArray == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null descriptor");
    return tally::emu::CreateArray(driver, pHandle, *pAllocateArray);
  });
}

// Waits for the context's queued work first (copies may still name the array), like cuMemFree.
CUresult cuArrayDestroy(CUarray hArray) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(auto context, driver.CurrentContext());
    TALLY_RETURN_IF_ERROR(driver.arrays().Lookup(hArray).status());
    context->Synchronize();
    return driver.arrays().Remove(hArray).status();
  });
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pArrayDescriptor));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<CudaArray> array, driver.arrays().Lookup(hArray));
    *pArrayDescriptor = array->desc;
    return absl::OkStatus();
  });
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pArrayDescriptor));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<CudaArray> array, driver.arrays().Lookup(hArray));
    if (array->desc.Depth != 0) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "a 3-D array needs cuArray3DGetDescriptor");
    }
    *pArrayDescriptor = {array->desc.Width, array->desc.Height, array->desc.Format,
                         array->desc.NumChannels};
    return absl::OkStatus();
  });
}

}  // extern "C"
