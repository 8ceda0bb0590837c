// Copies and memsets of pitched boxes (cudaMemcpy2D/3D, cudaMemset2D/3D, and every copy with
// page-locked host memory as a 1-row box). Each side is resolved to memory the client owns
// before anything is issued: device ranges, host blocks, or a bulk block.
#include <cuda.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/memset.h"
#include "server/handlers/waiting.h"

namespace tally::server {
namespace {

// No real box comes near this; it keeps the span arithmetic below far from overflowing.
constexpr uint64_t kMaxDimension = uint64_t{1} << 40;

// The bytes a box spans from its first byte: depth - 1 slices, height - 1 rows and one row.
absl::StatusOr<uint64_t> BoxSpan(const ipc::CopySide& side, const ipc::CopyExtent& extent) {
  if (extent.width == 0 || extent.height == 0 || extent.depth == 0) return 0;
  if (extent.width > kMaxDimension || extent.height > kMaxDimension ||
      extent.depth > kMaxDimension || side.pitch > kMaxDimension ||
      side.slice_height > kMaxDimension) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "copy extent or pitch out of range");
  }
  if (side.pitch < extent.width || (extent.depth > 1 && side.slice_height < extent.height)) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("pitch %d below width %d or slice height %d below height %d",
                                       side.pitch, extent.width, side.slice_height, extent.height));
  }
  using Wide = unsigned __int128;
  const Wide span = Wide{extent.depth - 1} * side.pitch * side.slice_height +
                    Wide{extent.height - 1} * side.pitch + extent.width;
  if (span > kMaxDimension) return ClientError(CUDA_ERROR_INVALID_VALUE, "copy spans too much");
  return static_cast<uint64_t>(span);
}

struct ResolvedSide {
  CUmemorytype type;
  uint64_t address;  // a device pointer or a host pointer in this process
  uint64_t pitch;
  uint64_t slice_height;
};

absl::StatusOr<ResolvedSide> Resolve(Session& session, const ipc::CopySide& side, uint64_t span) {
  switch (static_cast<ipc::MemorySpace>(side.space)) {
    case ipc::MemorySpace::kDevice:
      TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(side.address, span));
      return ResolvedSide{CU_MEMORYTYPE_DEVICE, side.address, side.pitch, side.slice_height};
    case ipc::MemorySpace::kHostRegion:
      // The same address in this process: the region is mapped where the client has it.
      TALLY_RETURN_IF_ERROR(session.CheckHostRange(side.address, span));
      return ResolvedSide{CU_MEMORYTYPE_HOST, side.address, side.pitch, side.slice_height};
    case ipc::MemorySpace::kBulk: {
      TALLY_ASSIGN_OR_RETURN(std::span<std::byte> bytes,
                             session.ResolveBulk({.offset = side.address, .size = span}));
      return ResolvedSide{CU_MEMORYTYPE_HOST, reinterpret_cast<uint64_t>(bytes.data()), side.pitch,
                          side.slice_height};
    }
  }
  return ClientError(CUDA_ERROR_INVALID_VALUE,
                     absl::StrFormat("unknown memory space %d of a copy", side.space));
}

void* Host(uint64_t address) { return reinterpret_cast<void*>(address); }

// One row: the 1-D driver copies (host blocks are device memory too, by unified addressing).
CUresult CopyRow(const DriverApi& api, const ResolvedSide& dst, const ResolvedSide& src,
                 uint64_t bytes, CUstream stream) {
  if (dst.type == CU_MEMORYTYPE_DEVICE) {
    return src.type == CU_MEMORYTYPE_DEVICE
               ? api.cuMemcpyDtoDAsync(dst.address, src.address, bytes, stream)
               : api.cuMemcpyHtoDAsync(dst.address, Host(src.address), bytes, stream);
  }
  return api.cuMemcpyDtoHAsync(Host(dst.address), src.address, bytes, stream);
}

CUresult CopyBox(const DriverApi& api, const ResolvedSide& dst, const ResolvedSide& src,
                 const ipc::CopyExtent& extent, CUstream stream) {
  if (extent.height == 1 && extent.depth == 1) return CopyRow(api, dst, src, extent.width, stream);
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = src.type;
  copy.srcHost = Host(src.address);
  copy.srcDevice = src.address;
  copy.srcPitch = src.pitch;
  copy.srcHeight = src.slice_height;
  copy.dstMemoryType = dst.type;
  copy.dstHost = Host(dst.address);
  copy.dstDevice = dst.address;
  copy.dstPitch = dst.pitch;
  copy.dstHeight = dst.slice_height;
  copy.WidthInBytes = extent.width;
  copy.Height = extent.height;
  copy.Depth = extent.depth;
  return api.cuMemcpy3DAsync(&copy, stream);
}

struct ResolvedCopy {
  ResolvedSide dst;
  ResolvedSide src;
  CUstream stream = nullptr;
  bool empty = false;
};

absl::StatusOr<ResolvedCopy> ResolveCopy(Session& session, const ipc::BoxCopy& copy) {
  TALLY_ASSIGN_OR_RETURN(const uint64_t dst_span, BoxSpan(copy.dst, copy.extent));
  TALLY_ASSIGN_OR_RETURN(const uint64_t src_span, BoxSpan(copy.src, copy.extent));
  ResolvedCopy resolved;
  resolved.empty = dst_span == 0;
  if (!resolved.empty) {
    TALLY_ASSIGN_OR_RETURN(resolved.dst, Resolve(session, copy.dst, dst_span));
    TALLY_ASSIGN_OR_RETURN(resolved.src, Resolve(session, copy.src, src_span));
  }
  TALLY_ASSIGN_OR_RETURN(resolved.stream, session.StreamForWork(copy.stream));
  return resolved;
}

}  // namespace

absl::Status Handle(Session& session, const ipc::Decoded<ipc::Memcpy3DRequest>& request) {
  const ipc::BoxCopy& copy = request.fields.copy;
  if (copy.dst.space == static_cast<uint32_t>(ipc::MemorySpace::kBulk) ||
      copy.src.space == static_cast<uint32_t>(ipc::MemorySpace::kBulk)) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "a one-way copy cannot use the bulk area");
  }
  TALLY_ASSIGN_OR_RETURN(const ResolvedCopy resolved, ResolveCopy(session, copy));
  if (resolved.empty) return absl::OkStatus();
  const DriverApi* api = &session.api();
  session.Enqueue(resolved.stream, [api, resolved, extent = copy.extent] {
    return CopyBox(*api, resolved.dst, resolved.src, extent, resolved.stream);
  });
  return absl::OkStatus();
}

// The bulk block is only valid until the response: the copy is issued and waited for (on a
// waiter thread).
absl::StatusOr<Deferred<ipc::Memcpy3DStagedResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::Memcpy3DStagedRequest>& request) {
  const ipc::BoxCopy& copy = request.fields.copy;
  const auto bulk = static_cast<uint32_t>(ipc::MemorySpace::kBulk);
  if ((copy.dst.space == bulk) == (copy.src.space == bulk)) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "a staged copy has exactly one bulk side");
  }
  TALLY_ASSIGN_OR_RETURN(const ResolvedCopy resolved, ResolveCopy(session, copy));
  TALLY_ASSIGN_OR_RETURN(StreamRef held, session.HoldStream(copy.stream));
  if (!resolved.empty) {
    const DriverApi* api = &session.api();
    session.Enqueue(resolved.stream, [api, resolved, extent = copy.extent] {
      return CopyBox(*api, resolved.dst, resolved.src, extent, resolved.stream);
    });
  }
  return AfterStreams<ipc::Memcpy3DStagedResponse>(session, {std::move(held)});
}

// Row by row unless the box is one dense range (the backend has 1-D memsets only).
CUresult SetElements(const DriverApi& api, uint64_t address, uint32_t value, uint32_t element_size,
                     uint64_t bytes, CUstream stream) {
  switch (element_size) {
    case 1:
      return api.cuMemsetD8Async(address, static_cast<unsigned char>(value), bytes, stream);
    case 2:
      return api.cuMemsetD16Async(address, static_cast<unsigned short>(value), bytes / 2, stream);
    default:
      return api.cuMemsetD32Async(address, value, bytes / 4, stream);
  }
}

absl::Status Handle(Session& session, const ipc::Decoded<ipc::Memset3DRequest>& request) {
  const ipc::Memset3DRequest& r = request.fields;
  if (r.dst.space != static_cast<uint32_t>(ipc::MemorySpace::kDevice)) {
    return ClientError(CUDA_ERROR_INVALID_VALUE, "memsets take device memory");
  }
  const uint32_t element = r.element_size;
  if ((element != 1 && element != 2 && element != 4) || r.dst.address % element != 0 ||
      r.dst.pitch % element != 0 || r.extent.width % element != 0) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("memset of %d-byte elements at 0x%x, pitch %d, width %d",
                                       element, r.dst.address, r.dst.pitch, r.extent.width));
  }
  TALLY_ASSIGN_OR_RETURN(const uint64_t span, BoxSpan(r.dst, r.extent));
  if (span > 0) TALLY_RETURN_IF_ERROR(session.CheckDeviceRange(r.dst.address, span));
  TALLY_ASSIGN_OR_RETURN(CUstream stream, session.StreamForWork(r.stream));
  if (span == 0) return absl::OkStatus();
  const DriverApi* api = &session.api();
  const uint32_t value = r.value;
  const ipc::CopySide dst = r.dst;
  const ipc::CopyExtent extent = r.extent;
  session.Enqueue(stream, [api, dst, extent, value, element, stream, span]() -> CUresult {
    const bool dense =
        dst.pitch == extent.width && (extent.depth == 1 || dst.slice_height == extent.height);
    if (dense) return SetElements(*api, dst.address, value, element, span, stream);
    for (uint64_t z = 0; z < extent.depth; ++z) {
      for (uint64_t y = 0; y < extent.height; ++y) {
        const uint64_t row = dst.address + (z * dst.slice_height + y) * dst.pitch;
        const CUresult set = SetElements(*api, row, value, element, extent.width, stream);
        if (set != CUDA_SUCCESS) return set;
      }
    }
    return CUDA_SUCCESS;
  });
  return absl::OkStatus();
}

}  // namespace tally::server
