// cuMemcpy2D/3D[Async]: pitched copies between host, device and unified memory, sub-regions at
// offsets, and the documented errors for bad pitches, ranges and descriptors.
#include <cstring>
#include <numeric>
#include <vector>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

constexpr size_t kWidth = 24, kHeight = 5, kDepth = 3;  // bytes, rows, slices of the copy

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + 11);
  return v;
}

TEST_CASE("cuMemcpy2D copies a sub-rectangle between pitched host and device buffers") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  constexpr size_t kHostPitch = 40, kDevicePitch = 64, kRows = 8;
  std::vector<uint8_t> host = Pattern(kHostPitch * kRows);
  CUdeviceptr device = 0;
  EMU_OK(emu.cuMemAlloc_v2(&device, kDevicePitch * kRows));
  EMU_OK(emu.cuMemsetD8_v2(device, 0, kDevicePitch * kRows));

  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kHostPitch;
  up.srcXInBytes = 3;
  up.srcY = 2;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = device;
  up.dstPitch = kDevicePitch;
  up.dstXInBytes = 5;
  up.dstY = 1;
  up.WidthInBytes = kWidth;
  up.Height = kHeight;
  auto check = [&] {
    std::vector<uint8_t> back(kDevicePitch * kRows);
    EMU_OK(emu.cuMemcpyDtoH_v2(back.data(), device, back.size()));
    for (size_t y = 0; y < kRows; ++y) {
      for (size_t x = 0; x < kDevicePitch; ++x) {
        bool inside = y >= 1 && y < 1 + kHeight && x >= 5 && x < 5 + kWidth;
        uint8_t expected = inside ? host[(y - 1 + 2) * kHostPitch + (x - 5 + 3)] : 0;
        REQUIRE(back[y * kDevicePitch + x] == expected);
      }
    }
  };
  EMU_OK(emu.cuMemcpy2D_v2(&up));
  check();
  EMU_OK(emu.cuMemsetD8_v2(device, 0, kDevicePitch * kRows));
  EMU_OK(emu.cuMemcpy2DUnaligned_v2(&up));  // no alignment constraints here: the same copy
  check();

  // And back to the host through the async form with unified (device) and host pointers.
  std::vector<uint8_t> down(kWidth * kHeight, 0xee);
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.srcDevice = device;
  copy.srcPitch = kDevicePitch;
  copy.srcXInBytes = 5;
  copy.srcY = 1;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = reinterpret_cast<CUdeviceptr>(down.data());  // pageable host memory
  copy.dstPitch = kWidth;
  copy.WidthInBytes = kWidth;
  copy.Height = kHeight;
  EMU_OK(emu.cuMemcpy2DAsync_v2(&copy, nullptr));
  EMU_OK(emu.cuCtxSynchronize());
  for (size_t y = 0; y < kHeight; ++y) {
    for (size_t x = 0; x < kWidth; ++x) {
      REQUIRE(down[y * kWidth + x] == host[(y + 2) * kHostPitch + x + 3]);
    }
  }
  EMU_OK(emu.cuMemFree_v2(device));
}

TEST_CASE("cuMemcpy3D copies a box between device buffers of different pitch and height") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  constexpr size_t kSrcPitch = 32, kSrcHeight = 7, kSrcSlices = 4;
  constexpr size_t kDstPitch = 48, kDstHeight = 6, kDstSlices = 4;
  std::vector<uint8_t> source = Pattern(kSrcPitch * kSrcHeight * kSrcSlices);
  CUdeviceptr src = 0, dst = 0;
  EMU_OK(emu.cuMemAlloc_v2(&src, source.size()));
  EMU_OK(emu.cuMemAlloc_v2(&dst, kDstPitch * kDstHeight * kDstSlices));
  EMU_OK(emu.cuMemcpyHtoD_v2(src, source.data(), source.size()));
  EMU_OK(emu.cuMemsetD8_v2(dst, 0x5a, kDstPitch * kDstHeight * kDstSlices));

  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = src;
  copy.srcPitch = kSrcPitch;
  copy.srcHeight = kSrcHeight;
  copy.srcXInBytes = 4;
  copy.srcY = 1;
  copy.srcZ = 1;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = dst;
  copy.dstPitch = kDstPitch;
  copy.dstHeight = kDstHeight;
  copy.dstXInBytes = 2;
  copy.dstZ = 0;
  copy.WidthInBytes = kWidth;
  copy.Height = kHeight;
  copy.Depth = kDepth;
  EMU_OK(emu.cuMemcpy3D_v2(&copy));

  std::vector<uint8_t> back(kDstPitch * kDstHeight * kDstSlices);
  EMU_OK(emu.cuMemcpyDtoH_v2(back.data(), dst, back.size()));
  for (size_t z = 0; z < kDstSlices; ++z) {
    for (size_t y = 0; y < kDstHeight; ++y) {
      for (size_t x = 0; x < kDstPitch; ++x) {
        bool inside = z < kDepth && y < kHeight && x >= 2 && x < 2 + kWidth;
        uint8_t expected =
            inside ? source[(z + 1) * kSrcPitch * kSrcHeight + (y + 1) * kSrcPitch + x - 2 + 4]
                   : 0x5a;
        REQUIRE(back[(z * kDstHeight + y) * kDstPitch + x] == expected);
      }
    }
  }

  // The async form into host memory, ordered on a stream.
  std::vector<uint8_t> host(kWidth * kHeight * kDepth);
  CUDA_MEMCPY3D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = src;
  down.srcPitch = kSrcPitch;
  down.srcHeight = kSrcHeight;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = host.data();
  down.dstPitch = kWidth;
  down.dstHeight = kHeight;
  down.WidthInBytes = kWidth;
  down.Height = kHeight;
  down.Depth = kDepth;
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, 0));
  EMU_OK(emu.cuMemcpy3DAsync_v2(&down, stream));
  EMU_OK(emu.cuStreamSynchronize(stream));
  for (size_t z = 0; z < kDepth; ++z) {
    for (size_t y = 0; y < kHeight; ++y) {
      for (size_t x = 0; x < kWidth; ++x) {
        REQUIRE(host[(z * kHeight + y) * kWidth + x] ==
                source[z * kSrcPitch * kSrcHeight + y * kSrcPitch + x]);
      }
    }
  }
  EMU_OK(emu.cuStreamDestroy_v2(stream));
  EMU_OK(emu.cuMemFree_v2(src));
  EMU_OK(emu.cuMemFree_v2(dst));
}

TEST_CASE("bad pitched copies give documented errors") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUdeviceptr device = 0;
  EMU_OK(emu.cuMemAlloc_v2(&device, 64 * 4));
  std::vector<uint8_t> host(64 * 4);
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = host.data();
  copy.srcPitch = 64;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = device;
  copy.dstPitch = 64;
  copy.WidthInBytes = 64;
  copy.Height = 4;
  EMU_OK(emu.cuMemcpy2D_v2(&copy));

  CHECK(emu.cuMemcpy2D_v2(nullptr) == CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY2D bad = copy;
  bad.dstPitch = 32;  // below the width
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = copy;
  bad.dstY = 1;  // the last row would end past the allocation
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = copy;
  bad.dstDevice = reinterpret_cast<CUdeviceptr>(host.data());  // not device memory
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = copy;
  bad.srcMemoryType = static_cast<CUmemorytype>(9);
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = copy;
  bad.srcHost = nullptr;
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = copy;
  bad.dstY = SIZE_MAX / 2;  // offset overflows
  CHECK(emu.cuMemcpy2D_v2(&bad) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpy2DAsync_v2(&copy, reinterpret_cast<CUstream>(0x1234)) ==
        CUDA_ERROR_INVALID_HANDLE);

  CUDA_MEMCPY3D box{};
  box.srcMemoryType = CU_MEMORYTYPE_HOST;
  box.srcHost = host.data();
  box.srcPitch = 64;
  box.srcHeight = 2;
  box.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  box.dstDevice = device;
  box.dstPitch = 64;
  box.dstHeight = 2;
  box.WidthInBytes = 64;
  box.Height = 2;
  box.Depth = 2;
  EMU_OK(emu.cuMemcpy3D_v2(&box));
  CUDA_MEMCPY3D bad_box = box;
  bad_box.dstHeight = 1;  // slices would overlap
  CHECK(emu.cuMemcpy3D_v2(&bad_box) == CUDA_ERROR_INVALID_VALUE);
  bad_box = box;
  bad_box.srcLOD = 1;
  CHECK(emu.cuMemcpy3D_v2(&bad_box) == CUDA_ERROR_INVALID_VALUE);
  bad_box = box;
  bad_box.Depth = 3;  // 3 slices of 128 bytes do not fit in 256
  CHECK(emu.cuMemcpy3D_v2(&bad_box) == CUDA_ERROR_INVALID_VALUE);
  bad_box = box;
  bad_box.Depth = 0;  // empty copies are fine
  EMU_OK(emu.cuMemcpy3D_v2(&bad_box));
  EMU_OK(emu.cuMemFree_v2(device));
}

}  // namespace
}  // namespace tally::emu::testing
