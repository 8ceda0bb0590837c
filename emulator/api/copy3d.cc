// Exports cuMemcpy2D[Async], cuMemcpy2DUnaligned and cuMemcpy3D[Async]: pitched copies between
// host, device, unified and array memory. A 2-D copy is a 3-D copy of depth 1. Every endpoint is
// resolved and its whole touched range checked at the call; rows are then copied in stream order.
#include <cuda.h>
#include <fmt/format.h>

#include <cstring>

#include "cuda_abi/memcpy_descriptors.h"
#include "emulator/internal/entry.h"
#include "emulator/internal/memory_layout.h"
#include "emulator/internal/submit.h"

using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

absl::StatusOr<PitchedRegion> ResolveEndpoint(Driver& driver, const MemcpySide& e,
                                              const CopyExtent& extent, const char* side) {
  PitchedRegion region;
  region.pitch = e.pitch;
  region.slice = e.pitch * e.height;
  switch (e.type) {
    case CU_MEMORYTYPE_HOST:
      if (e.host == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null host pointer");
      region.base = reinterpret_cast<uint64_t>(e.host);
      break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      if (e.device == 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "null device pointer");
      region.base = e.device;
      break;
    case CU_MEMORYTYPE_ARRAY:
      return ArrayRegion(driver, e.array, e.x_bytes, e.y, e.z, extent);
    default:
      return CudaError(CUDA_ERROR_INVALID_VALUE,
                       fmt::format("unknown {} memory type {}", side, static_cast<int>(e.type)));
  }
  if (e.pitch < extent.width_bytes || e.pitch > kMaxPitch) {
    return CudaError(
        CUDA_ERROR_INVALID_VALUE,
        fmt::format("{} pitch {} is below the width or above the limit", side, e.pitch));
  }
  if (extent.depth > 1 && e.height < extent.height) {
    return CudaError(CUDA_ERROR_INVALID_VALUE,
                     fmt::format("{} height {} is below the copy's height", side, e.height));
  }
  TALLY_ASSIGN_OR_RETURN(uint64_t offset, RegionOffset(region, e.x_bytes, e.y, e.z));
  TALLY_ASSIGN_OR_RETURN(uint64_t span, RegionSpan(region, extent));
  region.base += offset;
  // Device memory must lie in one allocation; unified pointers may also be pageable host memory,
  // which (like a host endpoint) cannot be checked.
  bool tracked = driver.memory().Find(region.base).has_value();
  if (e.type == CU_MEMORYTYPE_DEVICE || (e.type == CU_MEMORYTYPE_UNIFIED && tracked)) {
    const bool write = std::strcmp(side, "destination") == 0;
    TALLY_RETURN_IF_ERROR(driver.memory().CheckRange(region.base, span, write));
  }
  return region;
}

absl::Status Copy3D(Driver& driver, const CUDA_MEMCPY3D* copy, CUstream stream, bool wait) {
  if (copy == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null copy descriptor");
  TALLY_RETURN_IF_ERROR(driver.ResolveStream(stream).status());
  if (copy->srcLOD != 0 || copy->dstLOD != 0 || copy->reserved0 != nullptr ||
      copy->reserved1 != nullptr) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "srcLOD, dstLOD and reserved fields must be 0");
  }
  CopyExtent extent{copy->WidthInBytes, copy->Height, copy->Depth};
  if (extent.width_bytes == 0 || extent.height == 0 || extent.depth == 0) {
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(PitchedRegion src,
                         ResolveEndpoint(driver, SourceOf(*copy), extent, "source"));
  TALLY_ASSIGN_OR_RETURN(PitchedRegion dst,
                         ResolveEndpoint(driver, DestinationOf(*copy), extent, "destination"));
  return Submit(
      driver, stream, [=] { CopyRegion(dst, src, extent); }, wait);
}

absl::Status Copy2D(Driver& driver, const CUDA_MEMCPY2D* copy, CUstream stream, bool wait) {
  if (copy == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null copy descriptor");
  CUDA_MEMCPY3D copy3d = Memcpy3DOf(*copy);
  return Copy3D(driver, &copy3d, stream, wait);
}

}  // namespace
}  // namespace tally::emu

using tally::emu::Copy2D;
using tally::emu::Copy3D;

extern "C" {

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) {
  return Run([&](Driver& d) { return Copy2D(d, pCopy, {}, true); });
}

// The emulator has no alignment constraints on pitched copies, so the unaligned form is the same.
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  return Run([&](Driver& d) { return Copy2D(d, pCopy, {}, true); });
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  return Run([&](Driver& d) { return Copy2D(d, pCopy, hStream, false); });
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) {
  return Run([&](Driver& d) { return Copy3D(d, pCopy, {}, true); });
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  return Run([&](Driver& d) { return Copy3D(d, pCopy, hStream, false); });
}

}  // extern "C"
