// Copies and memsets: pageable host data chunked through the bulk area, page-locked host memory
// (the host region) and device memory copied by the server directly.
#include "client/copy.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "client/capture.h"
#include "client/channel.h"
#include "client/handles.h"
#include "common/status.h"

namespace tally::client {
namespace {

namespace ipc = tally::ipc;

// One-way calls are checked here too, so that a bad pointer fails the call itself rather than
// the next synchronising one (the server checks again: it trusts no client). Page-locked blocks
// count: kernels and the device use them too.
absl::Status CheckDeviceRange(const void* pointer, size_t count) {
  if (DeviceRanges::Get().Contains(pointer, count)) return absl::OkStatus();
  return CudaError(cudaErrorInvalidValue, "not a range of device memory allocated here");
}

absl::Status CheckKind(cudaMemcpyKind kind) {
  if (kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault) return absl::OkStatus();
  return CudaError(cudaErrorInvalidMemcpyDirection, "unknown cudaMemcpyKind");
}

enum class Where { kDevice, kHostRegion, kPageable };

// The host region by address, whatever `kind` says (its blocks are host and device memory);
// otherwise as `kind` says, or for cudaMemcpyDefault by the process's device ranges (with
// unified addressing the kind follows from the pointer, CUDA Runtime API, cudaMemcpy).
Where Locate(const Channel& channel, const void* pointer, cudaMemcpyKind kind, bool is_dst) {
  if (channel.InHostRegion(pointer)) return Where::kHostRegion;
  if (kind == cudaMemcpyDefault) {
    return DeviceRanges::Get().IsDevice(pointer) ? Where::kDevice : Where::kPageable;
  }
  const bool device = kind == cudaMemcpyDeviceToDevice ||
                      (is_dst ? kind == cudaMemcpyHostToDevice : kind == cudaMemcpyDeviceToHost);
  return device ? Where::kDevice : Where::kPageable;
}

ipc::MemorySpace SpaceOf(Where where) {
  return where == Where::kHostRegion ? ipc::MemorySpace::kHostRegion : ipc::MemorySpace::kDevice;
}

// The bytes a non-empty box spans from its first byte; checks the pitches.
absl::StatusOr<size_t> BoxSpan(const BoxSide& side, const BoxExtent& extent) {
  if (side.pitch < extent.width) {
    return CudaError(cudaErrorInvalidPitchValue, "a pitch is smaller than the row width");
  }
  if (extent.depth > 1 && side.slice_height < extent.height) {
    return CudaError(cudaErrorInvalidValue, "a slice has fewer rows than the copy's height");
  }
  using Wide = unsigned __int128;
  const Wide span = Wide{extent.depth - 1} * side.pitch * side.slice_height +
                    Wide{extent.height - 1} * side.pitch + extent.width;
  if (span > SIZE_MAX / 2) return CudaError(cudaErrorInvalidValue, "the copy spans too much");
  return static_cast<size_t>(span);
}

ipc::CopySide WireSide(ipc::MemorySpace space, uint64_t address, size_t pitch,
                       size_t slice_height) {
  return {.space = static_cast<uint32_t>(space),
          .reserved = 0,
          .address = address,
          .pitch = pitch,
          .slice_height = slice_height};
}

const std::byte* RowOf(const BoxSide& side, size_t slice, size_t row) {
  return static_cast<const std::byte*>(side.base) + (slice * side.slice_height + row) * side.pitch;
}

absl::Status Synchronize(Channel& channel, cudaStream_t stream) {
  return channel.Call(ipc::StreamSynchronizeRequest{.stream = StreamHandle(stream)}).status();
}

absl::Status CopyToDevice(Channel& channel, uint64_t dst, const std::byte* src, size_t count,
                          uint64_t stream) {
  for (size_t done = 0; done < count;) {
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(channel, count - done));
    std::memcpy(channel.bulk().Bytes(block).data(), src + done, block.size);
    auto answer =
        channel.Call(ipc::MemcpyHtoDRequest{.dst = dst + done, .stream = stream, .src = block});
    channel.bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    done += block.size;
  }
  return absl::OkStatus();
}

absl::Status CopyToHost(Channel& channel, std::byte* dst, uint64_t src, size_t count,
                        uint64_t stream) {
  for (size_t done = 0; done < count;) {
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(channel, count - done));
    auto answer =
        channel.Call(ipc::MemcpyDtoHRequest{.src = src + done, .stream = stream, .dst = block});
    if (answer.ok()) std::memcpy(dst + done, channel.bulk().Bytes(block).data(), block.size);
    channel.bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    done += block.size;
  }
  return absl::OkStatus();
}

// A box between device-side memory (device or host region) and pageable host memory, in chunks
// of whole slices when they fit, else of rows of one slice, each packed densely in a bulk block.
absl::Status StagedBox(Channel& channel, Where device_where, const BoxSide& device,
                       const BoxSide& host, const BoxExtent& extent, bool to_device,
                       cudaStream_t stream) {
  for (size_t z = 0, y = 0; z < extent.depth;) {
    const size_t rows_left = (extent.depth - z) * extent.height - y;
    const size_t wanted =
        rows_left > kMaxChunk / extent.width ? kMaxChunk : rows_left * extent.width;
    TALLY_ASSIGN_OR_RETURN(ipc::BulkRef block, AllocateChunk(channel, wanted));
    const size_t rows_fit = block.size / extent.width;
    if (rows_fit == 0) {
      channel.bulk().Free(block);
      return CudaError(cudaErrorMemoryAllocation, "the bulk area cannot hold one row");
    }
    // This chunk: `slices` slices of `rows` rows from (z, y).
    const bool whole_slices = y == 0 && rows_fit >= extent.height;
    const size_t slices = whole_slices ? std::min(rows_fit / extent.height, extent.depth - z) : 1;
    const size_t rows = whole_slices ? extent.height : std::min(rows_fit, extent.height - y);
    std::byte* const staged = channel.bulk().Bytes(block).data();
    const auto for_each_row = [&](auto&& fn) {
      for (size_t s = 0; s < slices; ++s) {
        for (size_t r = 0; r < rows; ++r) {
          fn(const_cast<std::byte*>(RowOf(host, z + s, y + r)),
             staged + (s * rows + r) * extent.width);
        }
      }
    };
    if (to_device) {
      for_each_row(
          [&](std::byte* row, std::byte* packed) { std::memcpy(packed, row, extent.width); });
    }
    const ipc::CopySide device_side =
        WireSide(SpaceOf(device_where), reinterpret_cast<uint64_t>(RowOf(device, z, y)),
                 device.pitch, device.slice_height);
    const ipc::CopySide bulk_side =
        WireSide(ipc::MemorySpace::kBulk, block.offset, extent.width, rows);
    const ipc::BoxCopy copy{.dst = to_device ? device_side : bulk_side,
                            .src = to_device ? bulk_side : device_side,
                            .extent = {extent.width, rows, slices},
                            .stream = StreamHandle(stream)};
    auto answer = channel.Call(ipc::Memcpy3DStagedRequest{.copy = copy});
    if (answer.ok() && !to_device) {
      for_each_row(
          [&](std::byte* row, std::byte* packed) { std::memcpy(row, packed, extent.width); });
    }
    channel.bulk().Free(block);
    TALLY_RETURN_IF_ERROR(answer.status());
    if (whole_slices) {
      z += slices;
    } else if ((y += rows) == extent.height) {
      y = 0;
      ++z;
    }
  }
  return absl::OkStatus();
}

cudaPitchedPtr PitchedOf(const BoxSide& side, size_t width) {
  return {.ptr = const_cast<void*>(side.base),
          .pitch = side.pitch,
          .xsize = width,
          .ysize = side.slice_height};
}

// An asynchronous copy into a capturing stream becomes a memcpy node; a synchronous one waits
// for its stream, which capture rules govern (capture.h).
absl::StatusOr<bool> CaptureCopy(const BoxSide& dst, const BoxSide& src, const BoxExtent& extent,
                                 cudaMemcpyKind kind, cudaStream_t stream, CopyMode mode) {
  if (mode == CopyMode::kSync) {
    TALLY_RETURN_IF_ERROR(CheckUnsafeCall());
    TALLY_RETURN_IF_ERROR(CheckSynchronizing(stream));
    return false;
  }
  return CaptureWork(stream, [&] {
    cudaMemcpy3DParms parms{};
    parms.dstPtr = PitchedOf(dst, extent.width);
    parms.srcPtr = PitchedOf(src, extent.width);
    parms.extent = {.width = extent.width, .height = extent.height, .depth = extent.depth};
    parms.kind = kind;
    return NodeWork(CopyWork{.parms = parms});
  });
}

// A memset into a capturing stream becomes a memset node per slice (cudaMemsetParams has no
// depth), each after the one before.
absl::StatusOr<bool> CaptureMemsetBox(const BoxSide& dst, uint32_t value, uint32_t element_size,
                                      const BoxExtent& extent, cudaStream_t stream) {
  for (size_t z = 0; z < extent.depth; ++z) {
    void* slice = const_cast<std::byte*>(static_cast<const std::byte*>(dst.base)) +
                  z * dst.pitch * dst.slice_height;
    TALLY_ASSIGN_OR_RETURN(
        const bool captured, CaptureWork(stream, [&] {
          return NodeWork(MemsetWork{.params = {.dst = slice,
                                                .pitch = dst.pitch,
                                                .value = value,
                                                .elementSize = element_size,
                                                .width = extent.width / element_size,
                                                .height = extent.height}});
        }));
    if (!captured) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<ipc::BulkRef> AllocateChunk(Channel& channel, size_t wanted) {
  for (size_t size = std::min(wanted, kMaxChunk); size > 0; size /= 2) {
    if (absl::StatusOr<ipc::BulkRef> block = channel.bulk().Allocate(size); block.ok()) {
      return block;
    }
  }
  return CudaError(cudaErrorMemoryAllocation, "the bulk area is exhausted");
}

uint64_t NewBufferId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

absl::Status ReadDevice(void* dst, uint64_t src, size_t count) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return CopyToHost(*channel, static_cast<std::byte*>(dst), src, count, /*stream=*/0);
}

absl::Status WriteDevice(uint64_t dst, const void* src, size_t count) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return CopyToDevice(*channel, dst, static_cast<const std::byte*>(src), count, /*stream=*/0);
}

absl::Status Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                  cudaStream_t stream, CopyMode mode) {
  if (count == 0) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureCopy({dst, count, 1}, {src, count, 1},
                                                          {count, 1, 1}, kind, stream, mode));
  if (captured) return absl::OkStatus();
  if (dst == nullptr || src == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null copy source or destination");
  }
  TALLY_RETURN_IF_ERROR(CheckKind(kind));
  if (kind == cudaMemcpyHostToHost) {
    std::memmove(dst, src, count);
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const Where to = Locate(*channel, dst, kind, /*is_dst=*/true);
  const Where from = Locate(*channel, src, kind, /*is_dst=*/false);
  if (to == Where::kPageable && from == Where::kPageable) {
    std::memmove(dst, src, count);
    return absl::OkStatus();
  }
  // Before any byte is staged, as for boxes (CopyBox).
  if (to != Where::kPageable) TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst, count));
  if (from != Where::kPageable) TALLY_RETURN_IF_ERROR(CheckDeviceRange(src, count));
  if (from == Where::kPageable) {
    return CopyToDevice(*channel, DevicePointer(dst), static_cast<const std::byte*>(src), count,
                        StreamHandle(stream));
  }
  if (to == Where::kPageable) {
    return CopyToHost(*channel, static_cast<std::byte*>(dst), DevicePointer(src), count,
                      StreamHandle(stream));
  }
  if (to == Where::kDevice && from == Where::kDevice) {
    // No host synchronisation for device-to-device copies (CUDA Runtime API, "API sync
    // behavior"), also from cudaMemcpy.
    return channel->Post(ipc::MemcpyDtoDRequest{.dst = DevicePointer(dst),
                                                .src = DevicePointer(src),
                                                .size = count,
                                                .stream = StreamHandle(stream)});
  }
  return CopyBox({dst, count, 1}, {src, count, 1}, {count, 1, 1}, kind, stream, mode);
}

absl::Status CopyBox(const BoxSide& dst, const BoxSide& src, const BoxExtent& extent,
                     cudaMemcpyKind kind, cudaStream_t stream, CopyMode mode) {
  TALLY_RETURN_IF_ERROR(CheckKind(kind));
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureCopy(dst, src, extent, kind, stream, mode));
  if (captured) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(const size_t dst_span, BoxSpan(dst, extent));
  TALLY_ASSIGN_OR_RETURN(const size_t src_span, BoxSpan(src, extent));
  if (dst.base == nullptr || src.base == nullptr) {
    return CudaError(cudaErrorInvalidValue, "null copy source or destination");
  }
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const Where to = Locate(*channel, dst.base, kind, /*is_dst=*/true);
  const Where from = Locate(*channel, src.base, kind, /*is_dst=*/false);
  if (kind == cudaMemcpyHostToHost || (to == Where::kPageable && from == Where::kPageable)) {
    for (size_t z = 0; z < extent.depth; ++z) {
      for (size_t y = 0; y < extent.height; ++y) {
        std::memmove(const_cast<std::byte*>(RowOf(dst, z, y)), RowOf(src, z, y), extent.width);
      }
    }
    return absl::OkStatus();
  }
  // Before any byte is staged: a box past the device side's allocation fails as CUDA's does
  // instead of having the shim read or write as far past the host side's buffer.
  if (to != Where::kPageable) TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst.base, dst_span));
  if (from != Where::kPageable) TALLY_RETURN_IF_ERROR(CheckDeviceRange(src.base, src_span));
  if (from == Where::kPageable) {
    return StagedBox(*channel, to, dst, src, extent, /*to_device=*/true, stream);
  }
  if (to == Where::kPageable) {
    return StagedBox(*channel, from, src, dst, extent, /*to_device=*/false, stream);
  }
  const ipc::BoxCopy copy{
      .dst = WireSide(SpaceOf(to), DevicePointer(dst.base), dst.pitch, dst.slice_height),
      .src = WireSide(SpaceOf(from), DevicePointer(src.base), src.pitch, src.slice_height),
      .extent = {extent.width, extent.height, extent.depth},
      .stream = StreamHandle(stream)};
  TALLY_RETURN_IF_ERROR(channel->Post(ipc::Memcpy3DRequest{.copy = copy}));
  return mode == CopyMode::kSync ? Synchronize(*channel, stream) : absl::OkStatus();
}

absl::Status Memset(void* dst, int value, size_t count, cudaStream_t stream) {
  return MemsetElements(dst, static_cast<uint8_t>(value), 1, count, stream);
}

absl::Status MemsetElements(void* dst, uint32_t value, uint32_t element_size, size_t count,
                            cudaStream_t stream) {
  if (count == 0) return absl::OkStatus();
  if (count > SIZE_MAX / element_size || DevicePointer(dst) % element_size != 0) {
    return CudaError(cudaErrorInvalidValue, "memset destination misaligned or count too large");
  }
  TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst, count * element_size));
  TALLY_ASSIGN_OR_RETURN(const bool captured, CaptureWork(stream, [&] {
                           return NodeWork(MemsetWork{.params = {.dst = dst,
                                                                 .pitch = 0,
                                                                 .value = value,
                                                                 .elementSize = element_size,
                                                                 .width = count,
                                                                 .height = 1}});
                         }));
  if (captured) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::MemsetRequest{.value = value,
                                          .element_size = element_size,
                                          .dst = DevicePointer(dst),
                                          .size = count * element_size,
                                          .stream = StreamHandle(stream)});
}

absl::Status MemsetBox(const BoxSide& dst, uint32_t value, uint32_t element_size,
                       const BoxExtent& extent, cudaStream_t stream) {
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return absl::OkStatus();
  if (DevicePointer(dst.base) % element_size != 0 || dst.pitch % element_size != 0 ||
      extent.width % element_size != 0) {
    return CudaError(cudaErrorInvalidValue, "memset destination or pitch misaligned");
  }
  TALLY_ASSIGN_OR_RETURN(const size_t span, BoxSpan(dst, extent));
  TALLY_RETURN_IF_ERROR(CheckDeviceRange(dst.base, span));
  TALLY_ASSIGN_OR_RETURN(const bool captured,
                         CaptureMemsetBox(dst, value, element_size, extent, stream));
  if (captured) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Post(ipc::Memset3DRequest{
      .value = value,
      .element_size = element_size,
      .dst =
          WireSide(ipc::MemorySpace::kDevice, DevicePointer(dst.base), dst.pitch, dst.slice_height),
      .extent = {extent.width, extent.height, extent.depth},
      .stream = StreamHandle(stream)});
}

namespace {

// The first byte of a box in linear memory: cudaPos::x counts bytes there (CUDA Runtime API,
// cudaMemcpy3D).
BoxSide SideOf(const cudaPitchedPtr& pointer, const cudaPos& position) {
  const auto* base = static_cast<const std::byte*>(pointer.ptr);
  return {base + (position.z * pointer.ysize + position.y) * pointer.pitch + position.x,
          pointer.pitch, pointer.ysize};
}

}  // namespace

absl::Status CopyParms(const cudaMemcpy3DParms& parms, cudaStream_t stream, CopyMode mode) {
  if (parms.srcArray != nullptr || parms.dstArray != nullptr) {
    return CudaError(cudaErrorNotSupported, "CUDA arrays are not supported");
  }
  const cudaExtent& e = parms.extent;
  return CopyBox(SideOf(parms.dstPtr, parms.dstPos), SideOf(parms.srcPtr, parms.srcPos),
                 {e.width, e.height, e.depth}, parms.kind, stream, mode);
}

absl::Status MemsetParams(const cudaMemsetParams& params, cudaStream_t stream) {
  if (params.elementSize != 1 && params.elementSize != 2 && params.elementSize != 4) {
    return CudaError(cudaErrorInvalidValue, "memset element size must be 1, 2 or 4");
  }
  const size_t width = params.width * params.elementSize;
  const size_t pitch = params.height > 1 ? params.pitch : width;
  return MemsetBox({params.dst, pitch, params.height}, params.value, params.elementSize,
                   {width, params.height, 1}, stream);
}

}  // namespace tally::client
