// Allocations, copies and memsets: contents, and the documented errors for bad sizes/pointers.
#include <cstring>
#include <vector>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

TEST_CASE("device memory round-trips through copies and memsets") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  constexpr size_t kCount = 1000;
  CUdeviceptr a = 0, b = 0;
  EMU_OK(emu.cuMemAlloc_v2(&a, kCount * 4));
  EMU_OK(emu.cuMemAlloc_v2(&b, kCount * 4));
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);
  std::vector<uint32_t> host(kCount), back(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<uint32_t>(i * 7);
  EMU_OK(emu.cuMemcpyHtoD_v2(a, host.data(), kCount * 4));
  EMU_OK(emu.cuMemcpyDtoD_v2(b, a, kCount * 4));
  EMU_OK(emu.cuMemcpyDtoH_v2(back.data(), b, kCount * 4));
  CHECK(back == host);

  EMU_OK(emu.cuMemsetD32_v2(a, 0xdeadbeef, kCount));
  EMU_OK(emu.cuMemsetD16_v2(a, 0x1234, 2));
  EMU_OK(emu.cuMemsetD8_v2(a + 8, 0xab, 1));
  EMU_OK(emu.cuMemcpyDtoH_v2(back.data(), a, kCount * 4));
  CHECK(back[0] == 0x12341234u);
  CHECK(back[2] == 0xdeadbeabu);
  CHECK(back[kCount - 1] == 0xdeadbeefu);

  CUdeviceptr base = 0;
  size_t size = 0;
  EMU_OK(emu.cuMemGetAddressRange_v2(&base, &size, a + 100));
  CHECK(base == a);
  CHECK(size == kCount * 4);
  EMU_OK(emu.cuMemFree_v2(a));
  EMU_OK(emu.cuMemFree_v2(b));
  EMU_OK(emu.cuMemFree_v2(0));
}

TEST_CASE("bad sizes and pointers give documented errors") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUdeviceptr pointer = 0;
  CHECK(emu.cuMemAlloc_v2(&pointer, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemAlloc_v2(nullptr, 16) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemAlloc_v2(&pointer, size_t{1} << 50) == CUDA_ERROR_OUT_OF_MEMORY);
  EMU_OK(emu.cuMemAlloc_v2(&pointer, 100));
  char buffer[256] = {};
  CHECK(emu.cuMemcpyHtoD_v2(pointer, buffer, 101) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyHtoD_v2(pointer + 50, buffer, 51) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyHtoD_v2(pointer, nullptr, 10) == CUDA_ERROR_INVALID_VALUE);
  // A host pointer is not a device pointer.
  CHECK(emu.cuMemcpyDtoH_v2(buffer, reinterpret_cast<CUdeviceptr>(buffer), 10) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyDtoD_v2(pointer, 0x10, 10) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemsetD32_v2(pointer + 2, 0, 4) == CUDA_ERROR_INVALID_VALUE);  // misaligned
  CHECK(emu.cuMemsetD32_v2(pointer, 0, 26) == CUDA_ERROR_INVALID_VALUE);     // 104 > 100 bytes
  CHECK(emu.cuMemsetD8Async(pointer, 0, 101, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemcpyHtoD_v2(pointer, buffer, 0));  // empty copies are fine
  CHECK(emu.cuMemFree_v2(pointer + 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemGetAddressRange_v2(nullptr, nullptr, 0x10) == CUDA_ERROR_NOT_FOUND);
  EMU_OK(emu.cuMemFree_v2(pointer));
  CHECK(emu.cuMemFree_v2(pointer) == CUDA_ERROR_INVALID_VALUE);                 // double free
  CHECK(emu.cuMemcpyHtoD_v2(pointer, buffer, 10) == CUDA_ERROR_INVALID_VALUE);  // freed
}

TEST_CASE("cuMemGetInfo accounts for allocations") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  size_t free_before = 0, total = 0, free_after = 0;
  EMU_OK(emu.cuMemGetInfo_v2(&free_before, &total));
  CUdeviceptr pointer = 0;
  EMU_OK(emu.cuMemAlloc_v2(&pointer, 1 << 20));
  EMU_OK(emu.cuMemGetInfo_v2(&free_after, &total));
  CHECK(free_before - free_after == 1 << 20);
  EMU_OK(emu.cuMemFree_v2(pointer));
  EMU_OK(emu.cuMemGetInfo_v2(&free_after, &total));
  CHECK(free_after == free_before);
}

// CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: stream-ordered allocation from the default pool.
TEST_CASE("cuMemAllocAsync memory is usable in stream order and freed where the stream frees it") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  size_t free_before = 0, total = 0, free_now = 0;
  EMU_OK(emu.cuMemGetInfo_v2(&free_before, &total));
  CUdeviceptr pointer = 0;
  EMU_OK(emu.cuMemAllocAsync(&pointer, 1 << 20, stream));
  EMU_OK(emu.cuMemsetD32Async(pointer, 0x01020304, (1 << 20) / 4, stream));
  uint32_t word = 0;
  EMU_OK(emu.cuMemcpyDtoHAsync_v2(&word, pointer + 4096, 4, stream));
  EMU_OK(emu.cuMemFreeAsync(pointer, stream));
  EMU_OK(emu.cuStreamSynchronize(stream));
  CHECK(word == 0x01020304u);
  EMU_OK(emu.cuMemGetInfo_v2(&free_now, &total));
  CHECK(free_now == free_before);
  CHECK(emu.cuMemFreeAsync(pointer, stream) == CUDA_ERROR_INVALID_VALUE);  // already freed
  CHECK(emu.cuMemFreeAsync(pointer + 64, stream) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuStreamDestroy_v2(stream));
}

TEST_CASE("pinned, registered and managed memory are device-accessible host memory") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  void* pinned = nullptr;
  EMU_OK(emu.cuMemHostAlloc(&pinned, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
  CUdeviceptr mapped = 0;
  EMU_OK(emu.cuMemHostGetDevicePointer_v2(&mapped, pinned, 0));
  CHECK(mapped == reinterpret_cast<CUdeviceptr>(pinned));
  EMU_OK(emu.cuMemsetD8_v2(mapped, 7, 4096));
  CHECK(static_cast<unsigned char*>(pinned)[4095] == 7);
  CHECK(emu.cuMemHostGetDevicePointer_v2(&mapped, pinned, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemHostAlloc(&pinned, 16, 0x80) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemFreeHost(pinned));
  CHECK(emu.cuMemFreeHost(pinned) == CUDA_ERROR_INVALID_VALUE);

  std::vector<uint32_t> user(1024, 0);
  EMU_OK(emu.cuMemHostRegister_v2(user.data(), user.size() * 4, 0));
  CHECK(emu.cuMemHostRegister_v2(user.data() + 8, 16, 0) ==
        CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EMU_OK(emu.cuMemHostGetDevicePointer_v2(&mapped, user.data() + 10, 0));
  EMU_OK(emu.cuMemsetD32_v2(mapped, 42, 4));
  CHECK(user[10] == 42);
  CHECK(user[14] == 0);
  EMU_OK(emu.cuMemHostUnregister(user.data()));
  CHECK(emu.cuMemHostUnregister(user.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK(emu.cuMemHostGetDevicePointer_v2(&mapped, user.data(), 0) == CUDA_ERROR_INVALID_VALUE);

  CUdeviceptr managed = 0;
  EMU_OK(emu.cuMemAllocManaged(&managed, 64, CU_MEM_ATTACH_GLOBAL));
  reinterpret_cast<int*>(managed)[3] = 5;
  EMU_OK(emu.cuMemsetD32_v2(managed, 9, 2));
  CHECK(reinterpret_cast<int*>(managed)[1] == 9);
  CHECK(reinterpret_cast<int*>(managed)[3] == 5);
  CHECK(emu.cuMemAllocManaged(&managed, 64, 0) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemFree_v2(managed));
}

TEST_CASE("pointer attributes describe device, managed and host allocations") {
  const EmuApi& emu = Emu();
  CUcontext context = InitPrimaryContext();
  CUdeviceptr device = 0, managed = 0;
  void* pinned = nullptr;
  EMU_OK(emu.cuMemAlloc_v2(&device, 1000));
  EMU_OK(emu.cuMemAllocManaged(&managed, 512, CU_MEM_ATTACH_GLOBAL));
  EMU_OK(emu.cuMemHostAlloc(&pinned, 300, 0));
  CUdeviceptr pinned_address = reinterpret_cast<CUdeviceptr>(pinned);

  unsigned type = 0;
  EMU_OK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device + 10));
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  EMU_OK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, managed));
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  EMU_OK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pinned_address));
  CHECK(type == CU_MEMORYTYPE_HOST);

  CUcontext owner = nullptr;
  EMU_OK(emu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, device));
  CHECK(owner == context);
  CUdeviceptr start = 0, device_pointer = 0;
  size_t size = 0;
  EMU_OK(emu.cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, device + 999));
  EMU_OK(emu.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, device + 999));
  CHECK(start == device);
  CHECK(size == 1000);
  EMU_OK(emu.cuPointerGetAttribute(&device_pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   pinned_address + 4));
  CHECK(device_pointer == pinned_address + 4);
  void* host_pointer = nullptr;
  EMU_OK(emu.cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, managed));
  CHECK(host_pointer == reinterpret_cast<void*>(managed));
  CHECK(emu.cuPointerGetAttribute(&host_pointer, CU_POINTER_ATTRIBUTE_HOST_POINTER, device) ==
        CUDA_ERROR_INVALID_VALUE);
  int is_managed = -1;
  EMU_OK(emu.cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed));
  CHECK(is_managed == 1);
  EMU_OK(emu.cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, device));
  CHECK(is_managed == 0);
  unsigned long long id_a = 0, id_b = 0;
  EMU_OK(emu.cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, device));
  EMU_OK(emu.cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, managed));
  CHECK(id_a != id_b);

  int local = 0;
  CUdeviceptr stack_address = reinterpret_cast<CUdeviceptr>(&local);
  CHECK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, stack_address) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_P2P_TOKENS, device) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device) ==
        CUDA_ERROR_INVALID_VALUE);

  // The plural form: inapplicable attributes and unknown pointers read as zero, not errors.
  CUpointer_attribute attributes[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_HOST_POINTER,
      CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  type = 99;
  host_pointer = &local;
  owner = nullptr;
  size = 0;
  void* outputs[] = {&type, &host_pointer, &owner, &size};
  EMU_OK(emu.cuPointerGetAttributes(4, attributes, outputs, device + 1));
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CHECK(host_pointer == nullptr);
  CHECK(owner == context);
  CHECK(size == 1000);
  EMU_OK(emu.cuPointerGetAttributes(4, attributes, outputs, stack_address));
  CHECK(type == 0);
  CHECK(owner == nullptr);
  CHECK(size == 0);
  CHECK(emu.cuPointerGetAttributes(0, attributes, outputs, device) == CUDA_ERROR_INVALID_VALUE);

  EMU_OK(emu.cuMemFree_v2(device));
  CHECK(emu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device) ==
        CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemFree_v2(managed));
  EMU_OK(emu.cuMemFreeHost(pinned));
}

}  // namespace
}  // namespace tally::emu::testing
