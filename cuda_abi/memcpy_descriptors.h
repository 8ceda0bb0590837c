// For the two implementations of the CUDA driver API (the emulator and the client shim): the
// sides of a cuMemcpy3D descriptor, and a cuMemcpy2D descriptor as the cuMemcpy3D descriptor of
// the same copy, so that each implements the 2-D copies through its 3-D one.
#pragma once

#include <cuda.h>

namespace tally {

// One side of a copy as CUDA_MEMCPY3D describes it: `type` says which of host, device and
// array counts (CUDA Driver API, cuMemcpy3D).
struct MemcpySide {
  CUmemorytype type;
  size_t x_bytes, y, z, lod;
  const void* host;
  CUdeviceptr device;
  CUarray array;
  size_t pitch, height;  // height: rows per slice
};

inline MemcpySide SourceOf(const CUDA_MEMCPY3D& c) {
  return {c.srcMemoryType, c.srcXInBytes, c.srcY,     c.srcZ,     c.srcLOD,
          c.srcHost,       c.srcDevice,   c.srcArray, c.srcPitch, c.srcHeight};
}

inline MemcpySide DestinationOf(const CUDA_MEMCPY3D& c) {
  return {c.dstMemoryType, c.dstXInBytes, c.dstY,     c.dstZ,     c.dstLOD,
          c.dstHost,       c.dstDevice,   c.dstArray, c.dstPitch, c.dstHeight};
}

// Depth 1, each side's slice height the copy's height, no LOD, everything else carried over.
inline CUDA_MEMCPY3D Memcpy3DOf(const CUDA_MEMCPY2D& c) {
  CUDA_MEMCPY3D copy{};
  copy.srcXInBytes = c.srcXInBytes;
  copy.srcY = c.srcY;
  copy.srcMemoryType = c.srcMemoryType;
  copy.srcHost = c.srcHost;
  copy.srcDevice = c.srcDevice;
  copy.srcArray = c.srcArray;
  copy.srcPitch = c.srcPitch;
  copy.srcHeight = c.Height;
  copy.dstXInBytes = c.dstXInBytes;
  copy.dstY = c.dstY;
  copy.dstMemoryType = c.dstMemoryType;
  copy.dstHost = c.dstHost;
  copy.dstDevice = c.dstDevice;
  copy.dstArray = c.dstArray;
  copy.dstPitch = c.dstPitch;
  copy.dstHeight = c.Height;
  copy.WidthInBytes = c.WidthInBytes;
  copy.Height = c.Height;
  copy.Depth = 1;
  return copy;
}

}  // namespace tally
