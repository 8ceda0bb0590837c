// The driver API's host memory, copies and memsets as programs linked with -lcuda use them:
// page-locked (cuMemHostAlloc with every flag, cuMemAllocHost), mapped (a kernel writes through
// cuMemHostGetDevicePointer's pointer), registered and managed memory, unified cuMemcpy,
// pitched 2-D and 3-D copies between host and device memory, 2-D memsets of 8/16/32-bit
// elements, cuMemGetAddressRange and pointer attributes; each checked against a host reference,
// with the documented errors for bad arguments. Also that cuGetProcAddress answers the exports
// cuda.h maps each name to.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

namespace {

CUfunction add_one = nullptr;

void AddOne(CUdeviceptr data, unsigned n) {
  void* params[] = {&data, &n};
  CHECK_CU(cuLaunchKernel(add_one, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
  CHECK_CU(cuCtxSynchronize());
}

CUdeviceptr Device(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

// cuGetProcAddress gives what libcuda exports under the name cuda.h maps to (the _v2 forms).
void TestEntryPoints() {
  struct Expected {
    const char* name;
    int version;
    const char* symbol;
  };
  const Expected expected[] = {
      {"cuMemHostAlloc", 13000, "cuMemHostAlloc"},
      {"cuMemAllocHost", 13000, "cuMemAllocHost_v2"},
      {"cuMemFreeHost", 13000, "cuMemFreeHost"},
      {"cuMemHostGetDevicePointer", 13000, "cuMemHostGetDevicePointer_v2"},
      {"cuMemHostGetFlags", 13000, "cuMemHostGetFlags"},
      {"cuMemHostRegister", 13000, "cuMemHostRegister_v2"},
      {"cuMemHostRegister", 5000, "cuMemHostRegister"},
      {"cuMemHostUnregister", 13000, "cuMemHostUnregister"},
      {"cuMemAllocManaged", 13000, "cuMemAllocManaged"},
      {"cuMemcpy", 13000, "cuMemcpy"},
      {"cuMemcpyAsync", 13000, "cuMemcpyAsync"},
      {"cuMemcpy2D", 13000, "cuMemcpy2D_v2"},
      {"cuMemcpy2DUnaligned", 13000, "cuMemcpy2DUnaligned_v2"},
      {"cuMemcpy2DAsync", 13000, "cuMemcpy2DAsync_v2"},
      {"cuMemcpy3D", 13000, "cuMemcpy3D_v2"},
      {"cuMemcpy3DAsync", 13000, "cuMemcpy3DAsync_v2"},
      {"cuMemsetD2D8", 13000, "cuMemsetD2D8_v2"},
      {"cuMemsetD2D16", 13000, "cuMemsetD2D16_v2"},
      {"cuMemsetD2D32", 13000, "cuMemsetD2D32_v2"},
      {"cuMemsetD2D8Async", 13000, "cuMemsetD2D8Async"},
      {"cuMemsetD2D16Async", 13000, "cuMemsetD2D16Async"},
      {"cuMemsetD2D32Async", 13000, "cuMemsetD2D32Async"},
      {"cuMemGetAddressRange", 13000, "cuMemGetAddressRange_v2"},
      {"cuPointerGetAttribute", 13000, "cuPointerGetAttribute"},
      {"cuPointerGetAttributes", 13000, "cuPointerGetAttributes"},
  };
  for (const Expected& e : expected) ExpectProcAddress(e.name, e.version, e.symbol);
}

void TestPinned() {
  constexpr unsigned kN = 1000;
  const unsigned flags =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  unsigned* mapped = nullptr;
  CHECK_CU(cuMemHostAlloc(reinterpret_cast<void**>(&mapped), kN * sizeof(unsigned), flags));
  unsigned got_flags = 0;
  CHECK_CU(cuMemHostGetFlags(&got_flags, mapped + 10));
  EXPECT(got_flags == flags);
  for (unsigned i = 0; i < kN; ++i) mapped[i] = 3 * i;
  CUdeviceptr device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&device, mapped, 0));
  AddOne(device, kN);  // the kernel writes the host memory in place
  for (unsigned i = 0; i < kN; ++i) EXPECT(mapped[i] == 3 * i + 1);

  // cuMemAllocHost memory as a copy source and destination, through cuMemcpy (unified).
  unsigned* pinned = nullptr;
  CHECK_CU(cuMemAllocHost(reinterpret_cast<void**>(&pinned), kN * sizeof(unsigned)));
  CHECK_CU(cuMemHostGetFlags(&got_flags, pinned));
  EXPECT(got_flags == 0);
  CUdeviceptr buffer = 0;
  CHECK_CU(cuMemAlloc(&buffer, kN * sizeof(unsigned)));
  CHECK_CU(cuMemcpy(buffer, Device(mapped), kN * sizeof(unsigned)));
  AddOne(buffer, kN);
  CHECK_CU(cuMemcpy(Device(pinned), buffer, kN * sizeof(unsigned)));
  for (unsigned i = 0; i < kN; ++i) EXPECT(pinned[i] == 3 * i + 2);

  // Bad arguments.
  void* none = nullptr;
  EXPECT(cuMemHostAlloc(&none, 64, 0x100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostAlloc(nullptr, 64, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemAllocHost(nullptr, 64) == CUDA_ERROR_INVALID_VALUE);
  std::vector<unsigned> pageable(16);
  EXPECT(cuMemFreeHost(pageable.data()) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetDevicePointer(&device, pageable.data(), 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetDevicePointer(&device, mapped, 1) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetDevicePointer(nullptr, mapped, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetFlags(&got_flags, pageable.data()) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetFlags(nullptr, mapped) == CUDA_ERROR_INVALID_VALUE);

  CHECK_CU(cuMemFree(buffer));
  CHECK_CU(cuMemFreeHost(pinned));
  CHECK_CU(cuMemFreeHost(mapped));
  EXPECT(cuMemFreeHost(mapped) == CUDA_ERROR_INVALID_VALUE);  // freed already
}

void TestRegistered() {
  constexpr size_t kBytes = 8192;
  auto* memory = static_cast<unsigned char*>(std::aligned_alloc(4096, kBytes));
  for (size_t i = 0; i < kBytes; ++i) memory[i] = static_cast<unsigned char>(i * 7);
  CHECK_CU(cuMemHostRegister(memory, kBytes, CU_MEMHOSTREGISTER_PORTABLE));
  // Only cuMemHostAlloc memory has flags to report (CUDA Driver API, cuMemHostGetFlags).
  unsigned flags = 0;
  EXPECT(cuMemHostGetFlags(&flags, memory + 100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostRegister(memory + 4096, 4096, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  // Mapped for the device at an address of its own (client/README.md): kernels use it in place.
  CUdeviceptr mapped = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&mapped, memory, 0));
  EXPECT(mapped != Device(memory));
  AddOne(mapped, kBytes / sizeof(unsigned));
  for (size_t i = 0; i < kBytes; i += 4) {
    unsigned word = 0;
    std::memcpy(&word, memory + i, 4);
    unsigned original = 0;
    for (int b = 3; b >= 0; --b) original = original << 8 | static_cast<unsigned char>((i + b) * 7);
    EXPECT(word == original + 1);
  }
  for (size_t i = 0; i < kBytes; ++i) memory[i] = static_cast<unsigned char>(i * 7);
  // Copies from and to it work.
  CUdeviceptr buffer = 0;
  CHECK_CU(cuMemAlloc(&buffer, kBytes));
  CHECK_CU(cuMemcpyHtoD(buffer, memory, kBytes));
  std::memset(memory, 0, kBytes);
  CHECK_CU(cuMemcpy(Device(memory), buffer, kBytes));
  for (size_t i = 0; i < kBytes; ++i) EXPECT(memory[i] == static_cast<unsigned char>(i * 7));
  CHECK_CU(cuMemFree(buffer));

  EXPECT(cuMemHostUnregister(memory + 4096) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK_CU(cuMemHostUnregister(memory));
  EXPECT(cuMemHostUnregister(memory) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT(cuMemHostRegister(memory, kBytes, 0x100) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostRegister(nullptr, kBytes, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostRegister(memory, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  std::free(memory);
}

void TestManaged() {
  constexpr unsigned kN = 500;
  CUdeviceptr managed = 0;
  CHECK_CU(cuMemAllocManaged(&managed, kN * sizeof(unsigned), CU_MEM_ATTACH_GLOBAL));
  auto* host = reinterpret_cast<unsigned*>(managed);
  for (unsigned i = 0; i < kN; ++i) host[i] = i * i;
  AddOne(managed, kN);
  for (unsigned i = 0; i < kN; ++i) EXPECT(host[i] == i * i + 1);

  unsigned is_managed = 0;
  CHECK_CU(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed + 8));
  EXPECT(is_managed == 1);
  unsigned type = 0;
  CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, managed));
  EXPECT(type == CU_MEMORYTYPE_DEVICE);

  CUdeviceptr none = 0;
  EXPECT(cuMemAllocManaged(&none, 64, 0) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemAllocManaged(&none, 64, 3) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemAllocManaged(&none, 0, CU_MEM_ATTACH_GLOBAL) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuMemFree(managed));  // managed memory is freed with cuMemFree
}

// cuMemcpy and cuMemcpyAsync infer each side from the address.
void TestUnifiedCopies() {
  constexpr size_t kN = 3000;
  std::vector<uint8_t> source(kN), result(kN);
  for (size_t i = 0; i < kN; ++i) source[i] = static_cast<uint8_t>(i * 13 + 1);
  CUdeviceptr a = 0, b = 0;
  CHECK_CU(cuMemAlloc(&a, kN));
  CHECK_CU(cuMemAlloc(&b, kN));
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuMemcpy(a, Device(source.data()), kN));
  CHECK_CU(cuMemcpyAsync(b, a, kN, stream));
  CHECK_CU(cuMemcpyAsync(Device(result.data()), b, kN, stream));
  CHECK_CU(cuStreamSynchronize(stream));
  EXPECT(result == source);
  EXPECT(cuMemcpy(0, a, kN) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(a));
  CHECK_CU(cuMemFree(b));
}

// A width x height box at (x, y) of a pitched host image into a pitched device buffer, back
// into another host image at another offset, compared with the same copies done on the host.
void Test2D() {
  constexpr size_t kWidth = 37, kHeight = 9;
  constexpr size_t kHostPitch = 64, kHostRows = 12, kDevicePitch = 128, kDeviceRows = 16;
  std::vector<uint8_t> host(kHostPitch * kHostRows), back(kHostPitch * kHostRows, 0xcc);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 5 + 3);
  CUdeviceptr device = 0;
  CHECK_CU(cuMemAlloc(&device, kDevicePitch * kDeviceRows));
  CHECK_CU(cuMemsetD8(device, 0, kDevicePitch * kDeviceRows));

  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kHostPitch;
  up.srcXInBytes = 5;
  up.srcY = 2;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = device;
  up.dstPitch = kDevicePitch;
  up.dstXInBytes = 11;
  up.dstY = 4;
  up.WidthInBytes = kWidth;
  up.Height = kHeight;
  CHECK_CU(cuMemcpy2D(&up));

  // Device to device (unified addresses) on a stream, then back to the host unaligned.
  CUdeviceptr other = 0;
  CHECK_CU(cuMemAlloc(&other, kDevicePitch * kDeviceRows));
  CUDA_MEMCPY2D across{};
  across.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  across.srcDevice = device;
  across.srcPitch = kDevicePitch;
  across.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  across.dstDevice = other;
  across.dstPitch = kDevicePitch;
  across.WidthInBytes = kDevicePitch;
  across.Height = kDeviceRows;
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  CHECK_CU(cuMemcpy2DAsync(&across, stream));
  CHECK_CU(cuStreamSynchronize(stream));

  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = other;
  down.srcPitch = kDevicePitch;
  down.srcXInBytes = 11;
  down.srcY = 4;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = kHostPitch;
  down.dstXInBytes = 20;
  down.dstY = 1;
  down.WidthInBytes = kWidth;
  down.Height = kHeight;
  CHECK_CU(cuMemcpy2DUnaligned(&down));

  for (size_t y = 0; y < kHostRows; ++y) {
    for (size_t x = 0; x < kHostPitch; ++x) {
      const bool inside = y >= 1 && y < 1 + kHeight && x >= 20 && x < 20 + kWidth;
      const uint8_t expected =
          inside ? host[(y - 1 + 2) * kHostPitch + (x - 20 + 5)] : static_cast<uint8_t>(0xcc);
      EXPECT(back[y * kHostPitch + x] == expected);
    }
  }

  // Bad descriptors: a pitch below the row's end, arrays, an unknown memory type, null.
  CUDA_MEMCPY2D bad = up;
  bad.srcPitch = kWidth + 4;  // srcXInBytes is 5
  EXPECT(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  EXPECT(cuMemcpy2D(&bad) == CUDA_ERROR_NOT_SUPPORTED);
  bad = up;
  bad.srcMemoryType = static_cast<CUmemorytype>(9);
  EXPECT(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstDevice = 0x10;  // no allocation
  EXPECT(cuMemcpy2D(&bad) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemcpy2D(nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemcpy2DAsync(nullptr, stream) == CUDA_ERROR_INVALID_VALUE);

  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(device));
  CHECK_CU(cuMemFree(other));
}

// A box between a host volume and a device volume with different pitches and slice heights,
// out and back with offsets in all three dimensions.
void Test3D() {
  constexpr size_t kWidth = 6, kHeight = 3, kDepth = 4;
  constexpr size_t kHostPitch = 16, kHostRows = 5, kHostSlices = 6;
  constexpr size_t kDevicePitch = 32, kDeviceRows = 7, kDeviceSlices = 5;
  std::vector<uint8_t> host(kHostPitch * kHostRows * kHostSlices);
  std::vector<uint8_t> back(host.size(), 0x11);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 11 + 7);
  CUdeviceptr device = 0;
  CHECK_CU(cuMemAlloc(&device, kDevicePitch * kDeviceRows * kDeviceSlices));

  CUDA_MEMCPY3D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = kHostPitch;
  up.srcHeight = kHostRows;
  up.srcXInBytes = 2;
  up.srcY = 1;
  up.srcZ = 1;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = device;
  up.dstPitch = kDevicePitch;
  up.dstHeight = kDeviceRows;
  up.dstXInBytes = 9;
  up.dstY = 3;
  up.dstZ = 1;
  up.WidthInBytes = kWidth;
  up.Height = kHeight;
  up.Depth = kDepth;
  CHECK_CU(cuMemcpy3D(&up));

  CUDA_MEMCPY3D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = device;
  down.srcPitch = kDevicePitch;
  down.srcHeight = kDeviceRows;
  down.srcXInBytes = 9;
  down.srcY = 3;
  down.srcZ = 1;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = kHostPitch;
  down.dstHeight = kHostRows;
  down.WidthInBytes = kWidth;
  down.Height = kHeight;
  down.Depth = kDepth;
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuMemcpy3DAsync(&down, stream));
  CHECK_CU(cuStreamSynchronize(stream));

  for (size_t z = 0; z < kHostSlices; ++z) {
    for (size_t y = 0; y < kHostRows; ++y) {
      for (size_t x = 0; x < kHostPitch; ++x) {
        const bool inside = z < kDepth && y < kHeight && x < kWidth;
        const uint8_t expected =
            inside ? host[((z + 1) * kHostRows + y + 1) * kHostPitch + x + 2] : uint8_t{0x11};
        EXPECT(back[(z * kHostRows + y) * kHostPitch + x] == expected);
      }
    }
  }

  // A LOD, a reserved field, a slice height below the copy's last row, arrays.
  CUDA_MEMCPY3D bad = up;
  bad.srcLOD = 1;
  EXPECT(cuMemcpy3D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.reserved0 = &bad;
  EXPECT(cuMemcpy3D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.dstHeight = kHeight + 2;  // dstY is 3
  EXPECT(cuMemcpy3D(&bad) == CUDA_ERROR_INVALID_VALUE);
  bad = up;
  bad.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  EXPECT(cuMemcpy3DAsync(&bad, stream) == CUDA_ERROR_NOT_SUPPORTED);
  EXPECT(cuMemcpy3D(nullptr) == CUDA_ERROR_INVALID_VALUE);

  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(device));
}

// Rectangles of 8, 16 and 32-bit elements set in a pitched buffer, synchronously and on a
// stream, compared byte for byte with the same stores on the host.
void TestMemset2D() {
  constexpr size_t kPitch = 96, kRows = 10;
  CUdeviceptr device = 0;
  CHECK_CU(cuMemAlloc(&device, kPitch * kRows));
  std::vector<uint8_t> expected(kPitch * kRows, 0x5a);
  CHECK_CU(cuMemsetD8(device, 0x5a, kPitch * kRows));
  const auto fill = [&](size_t offset, size_t width, size_t height, const void* value,
                        size_t size) {
    for (size_t y = 0; y < height; ++y) {
      for (size_t x = 0; x < width; ++x) {
        std::memcpy(&expected[offset + y * kPitch + x * size], value, size);
      }
    }
  };
  const uint8_t u8 = 0xa7;
  const uint16_t u16 = 0xbeef;
  const uint32_t u32 = 0x01234567;
  CHECK_CU(cuMemsetD2D8(device + 3, kPitch, u8, 10, 3));
  fill(3, 10, 3, &u8, 1);
  CHECK_CU(cuMemsetD2D16(device + 4 * kPitch + 2, kPitch, u16, 7, 2));
  fill(4 * kPitch + 2, 7, 2, &u16, 2);
  CHECK_CU(cuMemsetD2D32(device + 6 * kPitch + 40, kPitch, u32, 5, 3));
  fill(6 * kPitch + 40, 5, 3, &u32, 4);
  // A blocking stream: its memsets wait for the ones above, which are asynchronous on the
  // default stream (CUDA Driver API, "API synchronization behavior": memsets of device memory).
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  const uint8_t a8 = 0x01;
  const uint16_t a16 = 0x7071;
  const uint32_t a32 = 0xdeadbeef;
  CHECK_CU(cuMemsetD2D8Async(device + 60, kPitch, a8, 30, 4, stream));
  fill(60, 30, 4, &a8, 1);
  CHECK_CU(cuMemsetD2D16Async(device + 9 * kPitch, 0, a16, 5, 1, stream));  // one row: no pitch
  fill(9 * kPitch, 5, 1, &a16, 2);
  CHECK_CU(cuMemsetD2D32Async(device + 2 * kPitch + 64, kPitch, a32, 8, 2, stream));
  fill(2 * kPitch + 64, 8, 2, &a32, 4);
  CHECK_CU(cuStreamSynchronize(stream));
  std::vector<uint8_t> result(kPitch * kRows);
  CHECK_CU(cuMemcpyDtoH(result.data(), device, result.size()));
  EXPECT(result == expected);

  // Misaligned 16/32-bit destinations or pitches, past the allocation, unknown memory.
  EXPECT(cuMemsetD2D16(device + 1, kPitch, u16, 4, 2) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemsetD2D32(device, kPitch + 2, u32, 4, 2) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemsetD2D8(device, kPitch, u8, kPitch, kRows + 1) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemsetD2D8(device, 4, u8, 8, 2) == CUDA_ERROR_INVALID_VALUE);  // pitch below width
  EXPECT(cuMemsetD2D32Async(0x10, kPitch, u32, 4, 2, stream) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(device));
}

void TestAddressesAndAttributes() {
  CUdeviceptr a = 0, b = 0;
  CHECK_CU(cuMemAlloc(&a, 1000));
  CHECK_CU(cuMemAlloc(&b, 24));
  void* pinned = nullptr;
  CHECK_CU(cuMemAllocHost(&pinned, 300));

  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK_CU(cuMemGetAddressRange(&base, &size, a + 999));
  EXPECT(base == a && size == 1000);
  CHECK_CU(cuMemGetAddressRange(nullptr, &size, b + 3));
  EXPECT(size == 24);
  CHECK_CU(cuMemGetAddressRange(&base, nullptr, Device(pinned) + 10));
  EXPECT(base == Device(pinned));
  EXPECT(cuMemGetAddressRange(&base, &size, 0x10) == CUDA_ERROR_NOT_FOUND);
  int local = 0;
  EXPECT(cuMemGetAddressRange(&base, &size, Device(&local)) == CUDA_ERROR_NOT_FOUND);

  unsigned type = 0;
  CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 5));
  EXPECT(type == CU_MEMORYTYPE_DEVICE);
  CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Device(pinned)));
  EXPECT(type == CU_MEMORYTYPE_HOST);
  CUcontext context = nullptr, current = nullptr;
  CHECK_CU(cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, a));
  CHECK_CU(cuCtxGetCurrent(&current));
  EXPECT(context == current);
  CUdeviceptr device_pointer = 0;
  CHECK_CU(cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, a + 7));
  EXPECT(device_pointer == a + 7);
  void* host_pointer = nullptr;
  CHECK_CU(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, Device(pinned)));
  EXPECT(host_pointer == pinned);
  EXPECT(cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, a) ==
         CUDA_ERROR_INVALID_VALUE);  // device memory has no host address
  CUdeviceptr start = 0;
  size_t range = 0;
  CHECK_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 100));
  CHECK_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 100));
  EXPECT(start == a && range == 1000);
  unsigned long long id_a = 0, id_b = 0;
  CHECK_CU(cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, a));
  CHECK_CU(cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
  EXPECT(id_a != 0 && id_b != 0 && id_a != id_b);
  int ordinal = -1;
  CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b));
  EXPECT(ordinal == 0);
  EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, Device(&local)) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) ==
         CUDA_ERROR_INVALID_VALUE);
  unsigned long long tokens[2];
  EXPECT(cuPointerGetAttribute(tokens, CU_POINTER_ATTRIBUTE_P2P_TOKENS, a) ==
         CUDA_ERROR_NOT_SUPPORTED);

  // Several at once; an unknown address gets zeros instead of an error.
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPED,
                                      CU_POINTER_ATTRIBUTE_HOST_POINTER};
  unsigned is_managed = 7, is_mapped = 7;
  void* data[] = {&type, &is_managed, &is_mapped, &host_pointer};
  CHECK_CU(cuPointerGetAttributes(4, attributes, data, b));
  EXPECT(type == CU_MEMORYTYPE_DEVICE && is_managed == 0 && is_mapped == 1 &&
         host_pointer == nullptr);
  CHECK_CU(cuPointerGetAttributes(4, attributes, data, Device(&local)));
  EXPECT(type == 0 && is_managed == 0 && is_mapped == 0 && host_pointer == nullptr);
  EXPECT(cuPointerGetAttributes(4, attributes, nullptr, b) == CUDA_ERROR_INVALID_VALUE);

  CHECK_CU(cuMemFreeHost(pinned));
  CHECK_CU(cuMemFree(a));
  CHECK_CU(cuMemFree(b));
  // Freed memory is unknown again.
  EXPECT(cuMemGetAddressRange(&base, &size, a) == CUDA_ERROR_NOT_FOUND);
  EXPECT(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) ==
         CUDA_ERROR_INVALID_VALUE);
}

}  // namespace

int main() {
  void* none = nullptr;
  EXPECT(cuMemAllocHost(&none, 64) == CUDA_ERROR_NOT_INITIALIZED);  // before cuInit
  const CUdevice device = UsePrimaryContext();
  CUmodule module;
  add_one = LoadFunction(&module, kAddOnePtx, "add_one");

  TestEntryPoints();
  TestPinned();
  TestRegistered();
  TestManaged();
  TestUnifiedCopies();
  Test2D();
  Test3D();
  TestMemset2D();
  TestAddressesAndAttributes();

  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_memory: OK\n");
  return 0;
}
