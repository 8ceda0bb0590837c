// Exports cuMemcpy{HtoD,DtoH,DtoD}[Async] and cuMemsetD{8,16,32}[Async]. Ranges are checked at
// the call (bad pointers and sizes are the caller's error, answered synchronously); the copy
// itself runs in stream order. Synchronous forms are issued on the legacy NULL stream and wait.
#include <cuda.h>

#include <algorithm>
#include <cstring>

#include "emulator/internal/entry.h"
#include "emulator/internal/submit.h"

using tally::emu::Driver;
using tally::emu::Run;

namespace tally::emu {
namespace {

// Where an endpoint of a copy lives: host pointers cannot be checked (as in CUDA), device ones
// must lie inside one live allocation.
enum class Side { kHost, kDevice };

absl::Status CheckEndpoint(Driver& driver, const void* pointer, Side side, size_t bytes,
                           bool write) {
  if (side == Side::kDevice) {
    return driver.memory().CheckRange(reinterpret_cast<uint64_t>(pointer), bytes, write);
  }
  if (pointer == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null host pointer");
  return absl::OkStatus();
}

absl::Status Copy(Driver& driver, void* dst, Side dst_side, const void* src, Side src_side,
                  size_t bytes, CUstream stream, bool wait) {
  TALLY_RETURN_IF_ERROR(driver.ResolveStream(stream).status());
  if (bytes == 0) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(CheckEndpoint(driver, dst, dst_side, bytes, true));
  TALLY_RETURN_IF_ERROR(CheckEndpoint(driver, src, src_side, bytes, false));
  return Submit(
      driver, stream, [=] { std::memmove(dst, src, bytes); }, wait);
}

template <typename T>
absl::Status Fill(Driver& driver, CUdeviceptr dst, T value, size_t count, CUstream stream,
                  bool wait) {
  TALLY_RETURN_IF_ERROR(driver.ResolveStream(stream).status());
  if (count == 0) return absl::OkStatus();
  if (dst % sizeof(T) != 0) {
    return CudaError(CUDA_ERROR_INVALID_VALUE, "destination is not aligned to the element size");
  }
  if (count > SIZE_MAX / sizeof(T)) return CudaError(CUDA_ERROR_INVALID_VALUE, "count overflows");
  TALLY_RETURN_IF_ERROR(driver.memory().CheckRange(dst, count * sizeof(T), true));
  T* begin = reinterpret_cast<T*>(dst);
  return Submit(
      driver, stream, [=] { std::fill(begin, begin + count, value); }, wait);
}

void* Device(CUdeviceptr pointer) { return reinterpret_cast<void*>(pointer); }

}  // namespace
}  // namespace tally::emu

using tally::emu::Copy;
using tally::emu::Device;
using tally::emu::Fill;
using tally::emu::Side;

extern "C" {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return Run([&](Driver& d) {
    return Copy(d, Device(dstDevice), Side::kDevice, srcHost, Side::kHost, ByteCount, {}, true);
  });
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return Run([&](Driver& d) {
    return Copy(d, dstHost, Side::kHost, Device(srcDevice), Side::kDevice, ByteCount, {}, true);
  });
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return Run([&](Driver& d) {
    return Copy(d, Device(dstDevice), Side::kDevice, Device(srcDevice), Side::kDevice, ByteCount,
                {}, true);
  });
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  return Run([&](Driver& d) {
    return Copy(d, Device(dstDevice), Side::kDevice, srcHost, Side::kHost, ByteCount, hStream,
                false);
  });
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return Run([&](Driver& d) {
    return Copy(d, dstHost, Side::kHost, Device(srcDevice), Side::kDevice, ByteCount, hStream,
                false);
  });
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  return Run([&](Driver& d) {
    return Copy(d, Device(dstDevice), Side::kDevice, Device(srcDevice), Side::kDevice, ByteCount,
                hStream, false);
  });
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, uc, N, {}, true); });
}

CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, us, N, {}, true); });
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, ui, N, {}, true); });
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, uc, N, hStream, false); });
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, us, N, hStream, false); });
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
  return Run([&](Driver& d) { return Fill(d, dstDevice, ui, N, hStream, false); });
}

}  // extern "C"
