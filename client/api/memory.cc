// Device memory entry points, runtime and driver API: allocation (also pitched and 3-D), copies
// and memsets (the copying is in copy.cc), address ranges. Array (cudaArray_t, CUarray) forms
// are not supported. A CUdeviceptr is the address a cudaMalloc pointer holds.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "client/capture.h"
#include "client/channel.h"
#include "client/copy.h"
#include "client/device_attributes.h"
#include "client/entry.h"
#include "client/graph_memory.h"
#include "client/handles.h"
#include "client/host_blocks.h"
#include "cuda_abi/memcpy_descriptors.h"
#include "common/status.h"

using tally::MemcpySide;
using tally::client::AllocateDevice;
using tally::client::BoxExtent;
using tally::client::BoxSide;
using tally::client::Channel;
using tally::client::CheckOut;
using tally::client::CheckUnsafeCall;
using tally::client::Copy;
using tally::client::CopyBox;
using tally::client::CopyMode;
using tally::client::CopyParms;
using tally::client::CudaError;
using tally::client::DeviceAttribute;
using tally::client::DevicePointer;
using tally::client::DeviceRange;
using tally::client::DeviceRanges;
using tally::client::DriverError;
using tally::client::FreeDevice;
using tally::client::GraphAllocation;
using tally::client::HostBlockKind;
using tally::client::HostBlocks;
using tally::client::Memset;
using tally::client::MemsetBox;
using tally::client::MemsetElements;
using tally::client::RangeKind;
using tally::client::RuntimeCall;
using tally::client::DriverCall;
namespace ipc = tally::ipc;

namespace tally::client {

absl::Status AllocateDevice(void** pointer, size_t size) {
  TALLY_RETURN_IF_ERROR(CheckOut(pointer));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::MemAllocRequest{.size = size}));
  *pointer = reinterpret_cast<void*>(answer.fields.device_ptr);
  if (size > 0) DeviceRanges::Get().Add(answer.fields.device_ptr, size, RangeKind::kAllocation);
  return absl::OkStatus();
}

// The server issues the client's queued work before freeing.
absl::Status ReleaseDevice(void* pointer) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_RETURN_IF_ERROR(
      channel->Call(ipc::MemFreeRequest{.device_ptr = DevicePointer(pointer)}).status());
  DeviceRanges::Get().Remove(DevicePointer(pointer));
  return absl::OkStatus();
}

// Managed memory is a host block (host_memory.cc); a graph's memory is the graph's until the
// graph is destroyed (graph_memory.h).
absl::Status FreeDevice(void* pointer) {
  if (GraphAllocation::Owns(pointer)) return absl::OkStatus();
  if (const auto block = HostBlocks::Get().Find(pointer);
      block && block->kind == HostBlockKind::kManaged) {
    return HostBlocks::Get().Free(pointer, HostBlockKind::kManaged);
  }
  return ReleaseDevice(pointer);
}

}  // namespace tally::client

namespace {

// Rows start at multiples of the device's texture alignment, as cudaMallocPitch promises
// (CUDA Runtime API, cudaMallocPitch: "the pitch ... is guaranteed to satisfy alignment").
absl::Status AllocatePitched(void** pointer, size_t* pitch, size_t width, size_t rows) {
  TALLY_RETURN_IF_ERROR(CheckOut(pitch));
  TALLY_ASSIGN_OR_RETURN(const int texture_alignment,
                         DeviceAttribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT));
  const auto alignment = static_cast<size_t>(std::max(1, texture_alignment));
  *pitch = (width + alignment - 1) / alignment * alignment;
  return AllocateDevice(pointer, *pitch * rows);
}

absl::Status Copy3D(const cudaMemcpy3DParms* parms, cudaStream_t stream, CopyMode mode) {
  if (parms == nullptr) return CudaError(cudaErrorInvalidValue, "null cudaMemcpy3DParms");
  return CopyParms(*parms, stream, mode);
}

// cudaMemset2D/3D set bytes to the low byte of `value`.
absl::Status MemsetBytes(const BoxSide& dst, int value, const BoxExtent& extent,
                         cudaStream_t stream) {
  return MemsetBox(dst, static_cast<uint8_t>(value), 1, extent, stream);
}

absl::Status Memset3D(const cudaPitchedPtr& pointer, int value, const cudaExtent& extent,
                      cudaStream_t stream) {
  return MemsetBytes({pointer.ptr, pointer.pitch, pointer.ysize}, value,
                     {extent.width, extent.height, extent.depth}, stream);
}

absl::Status GetInfo(size_t* free_bytes, size_t* total_bytes) {
  TALLY_RETURN_IF_ERROR(CheckOut(free_bytes));
  TALLY_RETURN_IF_ERROR(CheckOut(total_bytes));
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::MemGetInfoRequest{}));
  *free_bytes = answer.fields.free_bytes;
  *total_bytes = answer.fields.total_bytes;
  return absl::OkStatus();
}

void* Pointer(CUdeviceptr address) { return reinterpret_cast<void*>(address); }

// Whether the side is device memory. Unified addresses are told apart as cudaMemcpyDefault
// tells them (the host region counts as device memory; copy.cc copies it in place either way).
absl::StatusOr<bool> IsDeviceSide(const MemcpySide& side) {
  switch (side.type) {
    case CU_MEMORYTYPE_HOST:
      return false;
    case CU_MEMORYTYPE_DEVICE:
      return true;
    case CU_MEMORYTYPE_UNIFIED:
      return DeviceRanges::Get().IsDevice(Pointer(side.device));
    case CU_MEMORYTYPE_ARRAY:
      return DriverError(CUDA_ERROR_NOT_SUPPORTED, "CUDA arrays are not supported");
  }
  return DriverError(CUDA_ERROR_INVALID_VALUE, "unknown CUmemorytype");
}

// The side's box: its first byte is at (z * height + y) * pitch + x (CUDA Driver API,
// cuMemcpy3D), whose pitch must hold x + WidthInBytes and whose slices Height + y rows.
absl::StatusOr<BoxSide> BoxOf(const MemcpySide& side, bool device, const CUDA_MEMCPY3D& copy,
                              size_t max_pitch) {
  if (side.lod != 0) return DriverError(CUDA_ERROR_INVALID_VALUE, "the LOD must be 0");
  if (side.pitch > max_pitch) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "a pitch exceeds CU_DEVICE_ATTRIBUTE_MAX_PITCH");
  }
  if (side.x_bytes > side.pitch || copy.WidthInBytes > side.pitch - side.x_bytes) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "a pitch is below the row's end");
  }
  if (copy.Depth > 1 && (side.y > side.height || copy.Height > side.height - side.y)) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "a slice height is below the copy's last row");
  }
  using Wide = unsigned __int128;
  const Wide offset = (Wide{side.z} * side.height + side.y) * side.pitch + side.x_bytes;
  if (offset > SIZE_MAX / 2) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "the copy starts too far");
  }
  const auto* base = static_cast<const std::byte*>(device ? Pointer(side.device) : side.host);
  if (base == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null copy address");
  return BoxSide{base + static_cast<size_t>(offset), side.pitch, side.height};
}

// cuMemcpy2D/3D and their Async forms: linear memory only. `check_pitch` is false for
// cuMemcpy2DUnaligned, which has no pitch limit.
absl::Status DriverCopy3D(const CUDA_MEMCPY3D* copy, CUstream stream, CopyMode mode,
                          bool check_pitch) {
  if (copy == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null copy descriptor");
  if (copy->reserved0 != nullptr || copy->reserved1 != nullptr) {
    return DriverError(CUDA_ERROR_INVALID_VALUE, "reserved0 and reserved1 must be NULL");
  }
  size_t max_pitch = SIZE_MAX;
  if (check_pitch) {
    TALLY_ASSIGN_OR_RETURN(const int device_max_pitch,
                           DeviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH));
    max_pitch = static_cast<size_t>(std::max(0, device_max_pitch));
  }
  const MemcpySide src = tally::SourceOf(*copy);
  const MemcpySide dst = tally::DestinationOf(*copy);
  TALLY_ASSIGN_OR_RETURN(const bool from_device, IsDeviceSide(src));
  TALLY_ASSIGN_OR_RETURN(const bool to_device, IsDeviceSide(dst));
  if (copy->WidthInBytes == 0 || copy->Height == 0 || copy->Depth == 0) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(const BoxSide src_box, BoxOf(src, from_device, *copy, max_pitch));
  TALLY_ASSIGN_OR_RETURN(const BoxSide dst_box, BoxOf(dst, to_device, *copy, max_pitch));
  const cudaMemcpyKind kind = from_device
                                  ? (to_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                                  : (to_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  return CopyBox(dst_box, src_box, {copy->WidthInBytes, copy->Height, copy->Depth}, kind, stream,
                 mode);
}

absl::Status DriverCopy2D(const CUDA_MEMCPY2D* copy, CUstream stream, CopyMode mode,
                          bool check_pitch) {
  if (copy == nullptr) return DriverError(CUDA_ERROR_INVALID_VALUE, "null copy descriptor");
  const CUDA_MEMCPY3D as_3d = tally::Memcpy3DOf(*copy);
  return DriverCopy3D(&as_3d, stream, mode, check_pitch);
}

// cuMemsetD2D8/16/32: `width` elements per row; the pitch is unused for a single row.
absl::Status MemsetRows(CUdeviceptr dst, size_t pitch, uint32_t value, uint32_t element_size,
                        size_t width, size_t height, CUstream stream) {
  if (width > SIZE_MAX / element_size) return DriverError(CUDA_ERROR_INVALID_VALUE, "too wide");
  const size_t row = width * element_size;
  return MemsetBox({Pointer(dst), height == 1 ? row : pitch, height}, value, element_size,
                   {row, height, 1}, stream);
}

// The allocation containing `pointer` (CUDA Driver API, cuMemGetAddressRange): device memory,
// page-locked and managed blocks, module variables. Either output may be null.
absl::Status AddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr pointer) {
  const std::optional<DeviceRange> range = DeviceRanges::Get().Find(Pointer(pointer));
  if (!range) return DriverError(CUDA_ERROR_NOT_FOUND, "not inside memory allocated here");
  if (base != nullptr) *base = range->base;
  if (size != nullptr) *size = range->size;
  return absl::OkStatus();
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** pointer, size_t size) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckUnsafeCall());
    return AllocateDevice(pointer, size);
  });
}

cudaError_t cudaFree(void* pointer) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckUnsafeCall());
    return FreeDevice(pointer);
  });
}

cudaError_t cudaMallocPitch(void** pointer, size_t* pitch, size_t width, size_t height) {
  return RuntimeCall(__func__, [&] { return AllocatePitched(pointer, pitch, width, height); });
}

cudaError_t cudaMalloc3D(cudaPitchedPtr* pitched, cudaExtent extent) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(pitched));
    void* pointer = nullptr;
    size_t pitch = 0;
    TALLY_RETURN_IF_ERROR(
        AllocatePitched(&pointer, &pitch, extent.width, extent.height * extent.depth));
    *pitched = {.ptr = pointer, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
    return absl::OkStatus();
  });
}

cudaError_t cudaMemcpy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t height, cudaMemcpyKind kind) {
  return RuntimeCall(__func__, [&] {
    return CopyBox({dst, dst_pitch, height}, {src, src_pitch, height}, {width, height, 1}, kind,
                   nullptr, CopyMode::kSync);
  });
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  return RuntimeCall(__func__, [&] {
    return CopyBox({dst, dst_pitch, height}, {src, src_pitch, height}, {width, height, 1}, kind,
                   stream, CopyMode::kAsync);
  });
}

cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* parms) {
  return RuntimeCall(__func__, [&] { return Copy3D(parms, nullptr, CopyMode::kSync); });
}

cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* parms, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return Copy3D(parms, stream, CopyMode::kAsync); });
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return RuntimeCall(__func__,
                     [&] { return Copy(dst, src, count, kind, nullptr, CopyMode::kSync); });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return RuntimeCall(__func__,
                     [&] { return Copy(dst, src, count, kind, stream, CopyMode::kAsync); });
}

cudaError_t cudaMemset(void* dst, int value, size_t count) {
  return RuntimeCall(__func__, [&] { return Memset(dst, value, count, nullptr); });
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return Memset(dst, value, count, stream); });
}

cudaError_t cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  return RuntimeCall(__func__, [&] {
    return MemsetBytes({dst, pitch, height}, value, {width, height, 1}, nullptr);
  });
}

cudaError_t cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream) {
  return RuntimeCall(__func__, [&] {
    return MemsetBytes({dst, pitch, height}, value, {width, height, 1}, stream);
  });
}

cudaError_t cudaMemset3D(cudaPitchedPtr pointer, int value, cudaExtent extent) {
  return RuntimeCall(__func__, [&] { return Memset3D(pointer, value, extent, nullptr); });
}

cudaError_t cudaMemset3DAsync(cudaPitchedPtr pointer, int value, cudaExtent extent,
                              cudaStream_t stream) {
  return RuntimeCall(__func__, [&] { return Memset3D(pointer, value, extent, stream); });
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  return RuntimeCall(__func__, [&] { return GetInfo(free_bytes, total_bytes); });
}

// Driver API (CUDA Driver API, "Memory Management"). Copies named HtoD/DtoH/DtoD behave as the
// runtime's with that cudaMemcpyKind; cuMemcpy infers the direction from the addresses, as
// cudaMemcpyDefault does (unified addressing).

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  return DriverCall(__func__, [&] { return GetInfo(free_bytes, total_bytes); });
}

CUresult cuMemAlloc_v2(CUdeviceptr* address, size_t size) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (size == 0) return DriverError(CUDA_ERROR_INVALID_VALUE, "zero-byte cuMemAlloc");
    return AllocateDevice(reinterpret_cast<void**>(address), size);
  });
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  return DriverCall(__func__, [&] { return FreeDevice(Pointer(address)); });
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t count) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), Pointer(src), count, cudaMemcpyDefault, nullptr, CopyMode::kSync);
  });
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t count, CUstream stream) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), Pointer(src), count, cudaMemcpyDefault, stream, CopyMode::kAsync);
  });
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t count) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), src, count, cudaMemcpyHostToDevice, nullptr, CopyMode::kSync);
  });
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t count) {
  return DriverCall(__func__, [&] {
    return Copy(dst, Pointer(src), count, cudaMemcpyDeviceToHost, nullptr, CopyMode::kSync);
  });
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t count) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), Pointer(src), count, cudaMemcpyDeviceToDevice, nullptr,
                CopyMode::kSync);
  });
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t count, CUstream stream) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), src, count, cudaMemcpyHostToDevice, stream, CopyMode::kAsync);
  });
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t count, CUstream stream) {
  return DriverCall(__func__, [&] {
    return Copy(dst, Pointer(src), count, cudaMemcpyDeviceToHost, stream, CopyMode::kAsync);
  });
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t count, CUstream stream) {
  return DriverCall(__func__, [&] {
    return Copy(Pointer(dst), Pointer(src), count, cudaMemcpyDeviceToDevice, stream,
                CopyMode::kAsync);
  });
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 1, count, nullptr); });
}

CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t count) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 2, count, nullptr); });
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 4, count, nullptr); });
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                         size_t height) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 1, width, height, nullptr); });
}

CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                          size_t height) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 2, width, height, nullptr); });
}

CUresult cuMemsetD2D32_v2(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width,
                          size_t height) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 4, width, height, nullptr); });
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
                           size_t height, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 1, width, height, stream); });
}

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value, size_t width,
                            size_t height, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 2, width, height, stream); });
}

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width,
                            size_t height, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetRows(dst, pitch, value, 4, width, height, stream); });
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* copy) {
  return DriverCall(__func__, [&] { return DriverCopy2D(copy, nullptr, CopyMode::kSync, true); });
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* copy) {
  return DriverCall(__func__, [&] { return DriverCopy2D(copy, nullptr, CopyMode::kSync, false); });
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* copy, CUstream stream) {
  return DriverCall(__func__, [&] { return DriverCopy2D(copy, stream, CopyMode::kAsync, true); });
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* copy) {
  return DriverCall(__func__, [&] { return DriverCopy3D(copy, nullptr, CopyMode::kSync, true); });
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* copy, CUstream stream) {
  return DriverCall(__func__, [&] { return DriverCopy3D(copy, stream, CopyMode::kAsync, true); });
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr pointer) {
  return DriverCall(__func__, [&] { return AddressRange(base, size, pointer); });
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 1, count, stream); });
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 2, count, stream); });
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
  return DriverCall(__func__,
                    [&] { return MemsetElements(Pointer(dst), value, 4, count, stream); });
}

// A channel format (CUDA Runtime API, cudaCreateChannelDesc): a plain value, nothing to ask the
// server. It returns a struct, so no error-code stub may stand in for it (unsupported.cc).
cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind f) {
  return {x, y, z, w, f};
}

}  // extern "C"
