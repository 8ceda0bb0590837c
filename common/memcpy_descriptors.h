// For the two implementations of the CUDA driver API (the emulator and the client shim): a
// cuMemcpy2D descriptor as the cuMemcpy3D descriptor of the same copy, so that each implements
// the 2-D copies through its 3-D one.
#pragma once

#include <cuda.h>

namespace tally {

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
