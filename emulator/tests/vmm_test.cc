// Virtual memory management (CUDA driver API, "Virtual Memory Management"): reservations,
// cuMemCreate allocations, mappings and access flags, with kernels, copies, memsets, pointer
// attributes, memory accounting, tenants, and the documented errors.
#include <dlfcn.h>

#include <utility>
#include <vector>

// First: it defines what the CUDA headers need for the tests' versioned names.
#include "emulator/tests/kernel_util.h"
//
#include "cuda_abi/driver_extensions.h"

namespace tally::emu::testing {
namespace {

constexpr size_t kGranule = size_t{2} << 20;

CUmemAllocationProp DeviceProperties() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  return prop;
}

CUmemAccessDesc DeviceAccess(CUmemAccess_flags flags) {
  CUmemAccessDesc desc{};
  desc.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  desc.flags = flags;
  return desc;
}

CUdeviceptr Reserve(size_t size) {
  CUdeviceptr base = 0;
  EMU_OK(Emu().cuMemAddressReserve(&base, size, 0, 0, 0));
  CHECK(base % kGranule == 0);
  return base;
}

CUmemGenericAllocationHandle Create(size_t size) {
  const CUmemAllocationProp prop = DeviceProperties();
  CUmemGenericAllocationHandle handle = 0;
  EMU_OK(Emu().cuMemCreate(&handle, size, &prop, 0));
  return handle;
}

void SetAccess(CUdeviceptr base, size_t size, CUmemAccess_flags flags) {
  const CUmemAccessDesc desc = DeviceAccess(flags);
  EMU_OK(Emu().cuMemSetAccess(base, size, &desc, 1));
}

// A reservation of `granules`, with an allocation of `mapped` granules mapped at its start.
struct Region {
  explicit Region(size_t granules, size_t mapped, bool accessible = true)
      : reserved(granules * kGranule), size(mapped * kGranule) {
    EnsureContext();
    base = Reserve(reserved);
    handle = Create(size);
    EMU_OK(Emu().cuMemMap(base, size, 0, handle, 0));
    if (accessible) SetAccess(base, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  }
  ~Region() {
    if (size != 0) CHECK(Emu().cuMemUnmap(base, size) == CUDA_SUCCESS);
    CHECK(Emu().cuMemRelease(handle) == CUDA_SUCCESS);
    CHECK(Emu().cuMemAddressFree(base, reserved) == CUDA_SUCCESS);
  }
  CUdeviceptr base = 0;
  size_t reserved = 0;
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
};

// copy_word(from, to) in a context of its own (a fault must not reach other tests), on the
// context's NULL stream: what synchronising answers.
CUresult CopyWordIsolated(CUdeviceptr from, CUdeviceptr to) {
  ScratchContext scratch("tenant.ptx");
  return LaunchAndWait(scratch.Kernel("copy_word"), 1, 1, {&from, &to});
}

template <typename T>
T Attribute(CUpointer_attribute attribute, CUdeviceptr pointer) {
  T value{};
  EMU_OK(Emu().cuPointerGetAttribute(&value, attribute, pointer));
  return value;
}

TEST_CASE("the device supports VMM with a 2 MiB granularity") {
  const EmuApi& emu = Emu();
  EnsureContext();
  int supported = 0;
  EMU_OK(emu.cuDeviceGetAttribute(&supported,
                                  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  CHECK(supported == 1);
  CUmemAllocationProp prop = DeviceProperties();
  size_t granularity = 0;
  EMU_OK(emu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK(granularity == kGranule);
  granularity = 0;
  EMU_OK(
      emu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  CHECK(granularity == kGranule);

  CHECK(emu.cuMemGetAllocationGranularity(nullptr, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemGetAllocationGranularity(
            &granularity, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemGetAllocationGranularity(&granularity, &prop,
                                          static_cast<CUmemAllocationGranularity_flags>(7)) ==
        CUDA_ERROR_INVALID_VALUE);
  prop.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
  CHECK(emu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_ERROR_INVALID_VALUE);
  prop = DeviceProperties();
  prop.location.id = 1;
  CHECK(emu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_ERROR_INVALID_DEVICE);
  prop = DeviceProperties();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  CHECK(emu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_ERROR_NOT_SUPPORTED);
}

TEST_CASE("cuGetProcAddress answers the VMM entry points from the versions that introduced them") {
  const EmuApi& emu = Emu();
  void* pfn = nullptr;
  CUdriverProcAddressQueryResult status{};
  EMU_OK(emu.cuGetProcAddress_v2("cuMemMap", &pfn, 13000, 0, &status));
  CHECK(pfn == dlsym(emu.library, "cuMemMap"));
  EMU_OK(emu.cuGetProcAddress_v2("cuMemCreate", &pfn, 10020, 0, &status));
  CHECK(emu.cuGetProcAddress_v2("cuMemCreate", &pfn, 10010, 0, &status) == CUDA_ERROR_NOT_FOUND);
  CHECK(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EMU_OK(emu.cuGetProcAddress_v2("cuMemRetainAllocationHandle", &pfn, 11000, 0, &status));
  CHECK(emu.cuGetProcAddress_v2("cuMemRetainAllocationHandle", &pfn, 10020, 0, &status) ==
        CUDA_ERROR_NOT_FOUND);
}

TEST_CASE("accessible mapped memory works with kernels, copies, memsets and pointer queries") {
  const EmuApi& emu = Emu();
  Region region(4, 2);
  constexpr int kCount = 1024;
  const CUdeviceptr a = region.base;
  const CUdeviceptr b = region.base + kGranule;  // in the second granule
  const CUdeviceptr c = region.base + kGranule + kCount * sizeof(float);
  std::vector<float> host_a(kCount), host_b(kCount);
  for (int i = 0; i < kCount; ++i) {
    host_a[i] = static_cast<float>(i);
    host_b[i] = static_cast<float>(2 * i + 1);
  }
  EMU_OK(emu.cuMemcpyHtoD_v2(a, host_a.data(), kCount * sizeof(float)));
  EMU_OK(emu.cuMemcpyHtoD_v2(b, host_b.data(), kCount * sizeof(float)));
  int n = kCount;
  CUdeviceptr pa = a, pb = b, pc = c;
  EMU_OK(LaunchAndWait(BasicKernel("vec_add"), kCount / 128, 128, {&pa, &pb, &pc, &n}));
  const std::vector<float> sum = Download<float>(c, kCount);
  for (int i = 0; i < kCount; ++i) REQUIRE(sum[i] == static_cast<float>(3 * i + 1));

  // Asynchronous memset and copies on a stream, and a copy to cuMemAlloc memory.
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  EMU_OK(emu.cuMemsetD32Async(a, 0x01020304, kCount, stream));
  const CUdeviceptr plain = Zeros<unsigned>(kCount);
  EMU_OK(emu.cuMemcpyDtoDAsync_v2(plain, a, kCount * 4, stream));
  std::vector<unsigned> back(kCount);
  EMU_OK(emu.cuMemcpyDtoHAsync_v2(back.data(), plain, kCount * 4, stream));
  EMU_OK(emu.cuStreamSynchronize(stream));
  CHECK(back == std::vector<unsigned>(kCount, 0x01020304u));
  EMU_OK(emu.cuStreamDestroy_v2(stream));
  EMU_OK(emu.cuMemFree_v2(plain));

  // Pointer attributes: the range is the reservation, the mapping is the mapped range.
  CHECK(Attribute<unsigned>(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, c) == CU_MEMORYTYPE_DEVICE);
  CHECK(Attribute<CUdeviceptr>(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, c) == region.base);
  CHECK(Attribute<size_t>(CU_POINTER_ATTRIBUTE_RANGE_SIZE, c) == region.reserved);
  CHECK(Attribute<CUdeviceptr>(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, c) == region.base);
  CHECK(Attribute<size_t>(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, c) == region.size);
  CHECK(Attribute<int>(CU_POINTER_ATTRIBUTE_MAPPED, c) == 1);
  CHECK(Attribute<int>(CU_POINTER_ATTRIBUTE_IS_MANAGED, c) == 0);
  CHECK(Attribute<CUdeviceptr>(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, c) == c);
  void* host = nullptr;
  CHECK(emu.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, c) ==
        CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr range_base = 0;
  size_t range_size = 0;
  EMU_OK(emu.cuMemGetAddressRange_v2(&range_base, &range_size, c));
  CHECK(range_base == region.base);
  CHECK(range_size == region.size);
  // Not mapped: no CUDA pointer (cuPointerGetAttributes answers 0).
  CHECK(emu.cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_MAPPED, region.base + region.size) ==
        CUDA_ERROR_INVALID_VALUE);
  int mapped = 1;
  CUpointer_attribute which = CU_POINTER_ATTRIBUTE_MAPPED;
  void* data[] = {&mapped};
  EMU_OK(emu.cuPointerGetAttributes(1, &which, data, region.base + region.size));
  CHECK(mapped == 0);

  unsigned long long flags = 0;
  const CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EMU_OK(emu.cuMemGetAccess(&flags, &device, c));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemGenericAllocationHandle retained = 0;
  EMU_OK(emu.cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(c)));
  CHECK(retained == region.handle);
  EMU_OK(emu.cuMemRelease(retained));
  CUmemAllocationProp prop{};
  EMU_OK(emu.cuMemGetAllocationPropertiesFromHandle(&prop, region.handle));
  CHECK(prop.type == CU_MEM_ALLOCATION_TYPE_PINNED);
  CHECK(prop.requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE);
  CHECK(prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(prop.location.id == 0);
}

TEST_CASE("mapped memory is inaccessible until cuMemSetAccess grants access") {
  const EmuApi& emu = Emu();
  Region region(1, 1, false);
  const CUdeviceptr plain = Zeros<unsigned>(1);
  unsigned word = 7;
  CHECK(emu.cuMemcpyHtoD_v2(region.base, &word, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyDtoH_v2(&word, region.base, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemsetD32_v2(region.base, 0, 1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyDtoD_v2(plain, region.base, 4) == CUDA_ERROR_INVALID_VALUE);
  unsigned long long flags = 1;
  const CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EMU_OK(emu.cuMemGetAccess(&flags, &device, region.base));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CHECK(Attribute<int>(CU_POINTER_ATTRIBUTE_MAPPED, region.base) == 1);
  CHECK(CopyWordIsolated(region.base, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(CopyWordIsolated(plain, region.base) == CUDA_ERROR_ILLEGAL_ADDRESS);

  // Read-write, then read-only: reads work, writes fail.
  SetAccess(region.base, region.size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  word = 42;
  EMU_OK(emu.cuMemcpyHtoD_v2(region.base, &word, 4));
  SetAccess(region.base, region.size, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EMU_OK(emu.cuMemGetAccess(&flags, &device, region.base + 8));
  CHECK(flags == CU_MEM_ACCESS_FLAGS_PROT_READ);
  word = 0;
  EMU_OK(emu.cuMemcpyDtoH_v2(&word, region.base, 4));
  CHECK(word == 42);
  CHECK(emu.cuMemcpyHtoD_v2(region.base, &word, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemsetD8_v2(region.base, 0, 1) == CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY2D copy{};  // a pitched copy checks the destination's access too
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = &word;
  copy.srcPitch = 4;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = region.base;
  copy.dstPitch = 4;
  copy.WidthInBytes = 4;
  copy.Height = 1;
  CHECK(emu.cuMemcpy2D_v2(&copy) == CUDA_ERROR_INVALID_VALUE);
  std::swap(copy.srcMemoryType, copy.dstMemoryType);
  copy.srcDevice = region.base;
  copy.dstHost = &word;
  EMU_OK(emu.cuMemcpy2D_v2(&copy));
  CHECK(CopyWordIsolated(region.base, plain) == CUDA_SUCCESS);
  CHECK(Download<unsigned>(plain, 1)[0] == 42);
  CHECK(CopyWordIsolated(plain, region.base) == CUDA_ERROR_ILLEGAL_ADDRESS);

  SetAccess(region.base, region.size, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CHECK(emu.cuMemcpyDtoH_v2(&word, region.base, 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(CopyWordIsolated(region.base, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  EMU_OK(emu.cuMemFree_v2(plain));
}

TEST_CASE("the unmapped part of a reservation faults, and so does a range after cuMemUnmap") {
  const EmuApi& emu = Emu();
  Region region(2, 1);
  const CUdeviceptr plain = Zeros<unsigned>(1);
  const CUdeviceptr hole = region.base + kGranule;
  std::vector<char> buffer(64);
  CHECK(emu.cuMemcpyHtoD_v2(hole, buffer.data(), 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuMemcpyHtoD_v2(hole - 32, buffer.data(), 64) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemcpyHtoD_v2(hole - 32, buffer.data(), 32));
  CHECK(CopyWordIsolated(hole, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(CopyWordIsolated(plain, hole) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(CopyWordIsolated(hole - 4, plain) == CUDA_SUCCESS);

  // Unmapping waits for the kernel that writes the range.
  CUstream stream = nullptr;
  EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr out = region.base;
  int iterations = 200000;
  void* args[] = {&out, &iterations};
  EMU_OK(emu.cuLaunchKernel(BasicKernel("spin"), 4, 1, 1, 64, 1, 1, 0, stream, args, nullptr));
  EMU_OK(emu.cuMemUnmap(region.base, region.size));
  CHECK(emu.cuStreamQuery(stream) == CUDA_SUCCESS);
  EMU_OK(emu.cuStreamDestroy_v2(stream));
  const size_t size = region.size;
  region.size = 0;  // unmapped already
  CHECK(emu.cuMemcpyHtoD_v2(region.base, buffer.data(), 4) == CUDA_ERROR_INVALID_VALUE);
  CHECK(CopyWordIsolated(region.base, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  // A new mapping starts without access, and without the old contents' access.
  EMU_OK(emu.cuMemMap(region.base, size, 0, region.handle, 0));
  CHECK(emu.cuMemcpyHtoD_v2(region.base, buffer.data(), 4) == CUDA_ERROR_INVALID_VALUE);
  region.size = size;
  EMU_OK(emu.cuMemFree_v2(plain));
}

TEST_CASE("one allocation mapped at two addresses is the same memory") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const CUdeviceptr base = Reserve(3 * kGranule);
  const CUmemGenericAllocationHandle handle = Create(2 * kGranule);
  EMU_OK(emu.cuMemMap(base, kGranule, 0, handle, 0));
  EMU_OK(emu.cuMemMap(base + kGranule, kGranule, 0, handle, 0));
  EMU_OK(emu.cuMemMap(base + 2 * kGranule, kGranule, kGranule, handle, 0));  // second half
  SetAccess(base, 3 * kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);         // three whole mappings

  const unsigned first = 0x12345678, second = 0x9abcdef0;
  EMU_OK(emu.cuMemcpyHtoD_v2(base + 100, &first, 4));
  CHECK(Download<unsigned>(base + kGranule + 100, 1)[0] == first);
  EMU_OK(emu.cuMemcpyHtoD_v2(base + 2 * kGranule + 8, &second, 4));
  // A kernel writes through one alias; the other sees it.
  CHECK(CopyWordIsolated(base + 2 * kGranule + 8, base + kGranule + 200) == CUDA_SUCCESS);
  CHECK(Download<unsigned>(base + 200, 1)[0] == second);
  CHECK(Download<unsigned>(base + 8, 1)[0] != second);  // the first half is other memory

  // Each mapping stands alone.
  EMU_OK(emu.cuMemUnmap(base, kGranule));
  CHECK(Download<unsigned>(base + kGranule + 100, 1)[0] == first);
  EMU_OK(emu.cuMemUnmap(base + kGranule, kGranule));
  EMU_OK(emu.cuMemUnmap(base + 2 * kGranule, kGranule));
  EMU_OK(emu.cuMemRelease(handle));
  EMU_OK(emu.cuMemAddressFree(base, 3 * kGranule));
}

TEST_CASE("a copy may run across adjacent mappings of one reservation, not past them") {
  const EmuApi& emu = Emu();
  EnsureContext();
  const CUdeviceptr base = Reserve(4 * kGranule);
  const CUmemGenericAllocationHandle first = Create(kGranule);
  const CUmemGenericAllocationHandle second = Create(2 * kGranule);
  EMU_OK(emu.cuMemMap(base, kGranule, 0, first, 0));
  EMU_OK(emu.cuMemMap(base + kGranule, 2 * kGranule, 0, second, 0));
  SetAccess(base, 3 * kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  std::vector<unsigned> words(kGranule / 4);  // straddles the two mappings
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<unsigned>(i * 7 + 1);
  const CUdeviceptr straddling = base + kGranule / 2;
  EMU_OK(emu.cuMemcpyHtoD_v2(straddling, words.data(), kGranule));
  CHECK(Download<unsigned>(straddling, words.size()) == words);
  // Into the unmapped fourth granule: refused, nothing written.
  CHECK(emu.cuMemcpyHtoD_v2(base + 2 * kGranule + kGranule / 2, words.data(), kGranule) ==
        CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuMemUnmap(base, kGranule));
  EMU_OK(emu.cuMemUnmap(base + kGranule, 2 * kGranule));
  EMU_OK(emu.cuMemRelease(first));
  EMU_OK(emu.cuMemRelease(second));
  EMU_OK(emu.cuMemAddressFree(base, 4 * kGranule));
}

TEST_CASE("cuMemCreate memory counts as used device memory until released and unmapped") {
  const EmuApi& emu = Emu();
  EnsureContext();
  size_t free_before = 0, total = 0, free_now = 0;
  EMU_OK(emu.cuMemGetInfo_v2(&free_before, &total));
  const CUdeviceptr base = Reserve(2 * kGranule);
  const CUmemGenericAllocationHandle handle = Create(2 * kGranule);
  EMU_OK(emu.cuMemGetInfo_v2(&free_now, &total));
  CHECK(free_now == free_before - 2 * kGranule);
  EMU_OK(emu.cuMemMap(base, 2 * kGranule, 0, handle, 0));
  SetAccess(base, 2 * kGranule, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  const unsigned word = 99;
  EMU_OK(emu.cuMemcpyHtoD_v2(base + kGranule, &word, 4));

  // Released while mapped: the memory stays, and stays counted, until unmapped.
  EMU_OK(emu.cuMemRelease(handle));
  CHECK(emu.cuMemRelease(handle) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Download<unsigned>(base + kGranule, 1)[0] == word);
  EMU_OK(emu.cuMemGetInfo_v2(&free_now, &total));
  CHECK(free_now == free_before - 2 * kGranule);
  // Retaining it through the mapping gives the same handle back.
  CUmemGenericAllocationHandle retained = 0;
  EMU_OK(emu.cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + 4)));
  CHECK(retained == handle);
  EMU_OK(emu.cuMemRelease(retained));
  EMU_OK(emu.cuMemUnmap(base, 2 * kGranule));
  EMU_OK(emu.cuMemGetInfo_v2(&free_now, &total));
  CHECK(free_now == free_before);
  EMU_OK(emu.cuMemAddressFree(base, 2 * kGranule));

  // More than the device has.
  const CUmemAllocationProp prop = DeviceProperties();
  CUmemGenericAllocationHandle huge = 0;
  CHECK(emu.cuMemCreate(&huge, (total / kGranule + 1) * kGranule, &prop, 0) ==
        CUDA_ERROR_OUT_OF_MEMORY);
  // cuMemAlloc sees what cuMemCreate took.
  const size_t most = free_before / kGranule * kGranule;
  const CUmemGenericAllocationHandle big = Create(most);
  CUdeviceptr pointer = 0;
  CHECK(emu.cuMemAlloc_v2(&pointer, free_before - most + kGranule) == CUDA_ERROR_OUT_OF_MEMORY);
  EMU_OK(emu.cuMemRelease(big));
  EMU_OK(emu.cuMemGetInfo_v2(&free_now, &total));
  CHECK(free_now == free_before);
}

TEST_CASE("bad VMM arguments get the documented errors") {
  const EmuApi& emu = Emu();
  EnsureContext();
  constexpr CUresult kInvalid = CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr base = 0;
  // cuMemAddressReserve / cuMemAddressFree.
  CHECK(emu.cuMemAddressReserve(nullptr, kGranule, 0, 0, 0) == kInvalid);
  CHECK(emu.cuMemAddressReserve(&base, 0, 0, 0, 0) == kInvalid);
  CHECK(emu.cuMemAddressReserve(&base, 100, 0, 0, 0) == kInvalid);
  CHECK(emu.cuMemAddressReserve(&base, kGranule, 3 * kGranule, 0, 0) == kInvalid);
  CHECK(emu.cuMemAddressReserve(&base, kGranule, 0, 0x1001, 0) == kInvalid);
  CHECK(emu.cuMemAddressReserve(&base, kGranule, 0, 0, 1) == kInvalid);
  base = Reserve(2 * kGranule);
  CHECK(emu.cuMemAddressFree(base, kGranule) == kInvalid);
  CHECK(emu.cuMemAddressFree(base + kGranule, kGranule) == kInvalid);
  EMU_OK(emu.cuMemAddressFree(base, 2 * kGranule));
  CHECK(emu.cuMemAddressFree(base, 2 * kGranule) == kInvalid);
  // A free, aligned hint is honoured; a taken one is not, and the call still succeeds.
  CUdeviceptr hinted = 0;
  EMU_OK(emu.cuMemAddressReserve(&hinted, 2 * kGranule, 0, base, 0));
  CHECK(hinted == base);
  CUdeviceptr elsewhere = 0;
  EMU_OK(emu.cuMemAddressReserve(&elsewhere, kGranule, 0, base, 0));
  CHECK(elsewhere != base);
  EMU_OK(emu.cuMemAddressFree(elsewhere, kGranule));

  // cuMemCreate / cuMemRelease.
  CUmemAllocationProp prop = DeviceProperties();
  CUmemGenericAllocationHandle handle = 0;
  CHECK(emu.cuMemCreate(nullptr, kGranule, &prop, 0) == kInvalid);
  CHECK(emu.cuMemCreate(&handle, kGranule, nullptr, 0) == kInvalid);
  CHECK(emu.cuMemCreate(&handle, 0, &prop, 0) == kInvalid);
  CHECK(emu.cuMemCreate(&handle, kGranule + 4096, &prop, 0) == kInvalid);
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 1) == kInvalid);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
  prop = DeviceProperties();
  prop.location.id = 3;
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 0) == CUDA_ERROR_INVALID_DEVICE);
  prop = DeviceProperties();
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 0) == kInvalid);
  prop = DeviceProperties();
  prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  CHECK(emu.cuMemCreate(&handle, kGranule, &prop, 0) == kInvalid);
  CHECK(emu.cuMemRelease(0) == kInvalid);
  CHECK(emu.cuMemRelease(0x1234) == kInvalid);
  handle = Create(2 * kGranule);

  // cuMemMap.
  CHECK(emu.cuMemMap(hinted, kGranule, 0, handle, 1) == kInvalid);
  CHECK(emu.cuMemMap(hinted + 4096, kGranule, 0, handle, 0) == kInvalid);
  CHECK(emu.cuMemMap(hinted, kGranule + 4096, 0, handle, 0) == kInvalid);
  CHECK(emu.cuMemMap(hinted, 0, 0, handle, 0) == kInvalid);
  CHECK(emu.cuMemMap(hinted, kGranule, 4096, handle, 0) == kInvalid);
  CHECK(emu.cuMemMap(hinted, 2 * kGranule, kGranule, handle, 0) == kInvalid);      // past its end
  CHECK(emu.cuMemMap(hinted + kGranule, 2 * kGranule, 0, handle, 0) == kInvalid);  // reservation
  CHECK(emu.cuMemMap(hinted - kGranule, kGranule, 0, handle, 0) == kInvalid);      // outside
  CHECK(emu.cuMemMap(hinted, kGranule, 0, handle + 1, 0) == kInvalid);             // unknown handle
  EMU_OK(emu.cuMemMap(hinted, kGranule, 0, handle, 0));
  CHECK(emu.cuMemMap(hinted, kGranule, 0, handle, 0) == kInvalid);      // mapped already
  CHECK(emu.cuMemMap(hinted, 2 * kGranule, 0, handle, 0) == kInvalid);  // partly mapped
  CHECK(emu.cuMemAddressFree(hinted, 2 * kGranule) == kInvalid);        // still mapped

  // cuMemSetAccess / cuMemGetAccess.
  CUmemAccessDesc desc = DeviceAccess(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CHECK(emu.cuMemSetAccess(hinted, kGranule, nullptr, 1) == kInvalid);
  CHECK(emu.cuMemSetAccess(hinted, kGranule, &desc, 0) == kInvalid);
  CHECK(emu.cuMemSetAccess(hinted, 2 * kGranule, &desc, 1) == kInvalid);  // not fully mapped
  CHECK(emu.cuMemSetAccess(hinted, kGranule / 2, &desc, 1) == kInvalid);  // part of a mapping
  CHECK(emu.cuMemSetAccess(hinted, 0, &desc, 1) == kInvalid);
  desc.flags = static_cast<CUmemAccess_flags>(2);
  CHECK(emu.cuMemSetAccess(hinted, kGranule, &desc, 1) == kInvalid);
  desc = DeviceAccess(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  desc.location.id = 1;
  CHECK(emu.cuMemSetAccess(hinted, kGranule, &desc, 1) == CUDA_ERROR_INVALID_DEVICE);
  desc.location = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CHECK(emu.cuMemSetAccess(hinted, kGranule, &desc, 1) == kInvalid);
  unsigned long long flags = 0;
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CHECK(emu.cuMemGetAccess(nullptr, &device, hinted) == kInvalid);
  CHECK(emu.cuMemGetAccess(&flags, nullptr, hinted) == kInvalid);
  CHECK(emu.cuMemGetAccess(&flags, &device, hinted + kGranule) == kInvalid);  // not mapped
  device.id = 2;
  CHECK(emu.cuMemGetAccess(&flags, &device, hinted) == CUDA_ERROR_INVALID_DEVICE);

  // cuMemRetainAllocationHandle / cuMemGetAllocationPropertiesFromHandle.
  CUmemGenericAllocationHandle retained = 0;
  CHECK(emu.cuMemRetainAllocationHandle(nullptr, reinterpret_cast<void*>(hinted)) == kInvalid);
  CHECK(emu.cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(hinted + kGranule)) ==
        kInvalid);
  CUmemAllocationProp queried{};
  CHECK(emu.cuMemGetAllocationPropertiesFromHandle(nullptr, handle) == kInvalid);
  CHECK(emu.cuMemGetAllocationPropertiesFromHandle(&queried, 0x99) == kInvalid);

  // cuMemUnmap: exactly a mapping.
  CHECK(emu.cuMemUnmap(hinted + kGranule, kGranule) == kInvalid);  // not mapped
  CHECK(emu.cuMemUnmap(hinted, kGranule / 2) == kInvalid);         // a sub-range
  CHECK(emu.cuMemUnmap(hinted, 2 * kGranule) == kInvalid);
  EMU_OK(emu.cuMemUnmap(hinted, kGranule));
  CHECK(emu.cuMemUnmap(hinted, kGranule) == kInvalid);
  EMU_OK(emu.cuMemRelease(handle));
  CHECK(emu.cuMemMap(hinted, kGranule, 0, handle, 0) == kInvalid);  // released, never mapped
  EMU_OK(emu.cuMemAddressFree(hinted, 2 * kGranule));
}

TEST_CASE("a mapped range given to a tenant faults for another tenant's kernels") {
  const EmuApi& emu = Emu();
  Region region(2, 2);
  auto* set_stream_tenant =
      reinterpret_cast<PFN_tallyEmuStreamSetTenant>(dlsym(emu.library, "tallyEmuStreamSetTenant"));
  auto* set_memory_tenant =
      reinterpret_cast<PFN_tallyEmuMemSetTenant>(dlsym(emu.library, "tallyEmuMemSetTenant"));
  auto* tenant_error =
      reinterpret_cast<PFN_tallyEmuTenantGetError>(dlsym(emu.library, "tallyEmuTenantGetError"));
  REQUIRE(set_stream_tenant != nullptr);
  REQUIRE(set_memory_tenant != nullptr);
  REQUIRE(tenant_error != nullptr);
  constexpr unsigned long long kOwner = 31, kOther = 32;
  EMU_OK(set_memory_tenant(region.base, kOwner));
  // The range is owned as a whole: only its start names it.
  CHECK(set_memory_tenant(region.base + kGranule, kOwner) == CUDA_ERROR_INVALID_VALUE);
  const unsigned secret = 1234;
  EMU_OK(emu.cuMemcpyHtoD_v2(region.base + kGranule + 16, &secret, 4));  // the owner: the server
  const CUdeviceptr plain = Zeros<unsigned>(1);

  const CUfunction copy = KernelFrom("tenant", "copy_word");
  auto copy_on = [&](unsigned long long tenant, CUdeviceptr from, CUdeviceptr to) {
    CUstream stream = nullptr;
    EMU_OK(emu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    EMU_OK(set_stream_tenant(stream, tenant));
    void* args[] = {&from, &to};
    CUresult result = emu.cuLaunchKernel(copy, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr);
    if (result == CUDA_SUCCESS) result = emu.cuStreamSynchronize(stream);
    EMU_OK(emu.cuStreamDestroy_v2(stream));
    return result;
  };
  CHECK(copy_on(kOwner, region.base + kGranule + 16, plain) == CUDA_SUCCESS);
  CHECK(Download<unsigned>(plain, 1)[0] == secret);
  CHECK(copy_on(kOther, region.base + kGranule + 16, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(tenant_error(kOther) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(tenant_error(kOwner) == CUDA_SUCCESS);
  CHECK(copy_on(kOther + 1, plain, region.base) == CUDA_ERROR_ILLEGAL_ADDRESS);  // a store
  // Ownership outlives access changes; the context carries on.
  SetAccess(region.base, region.size, CU_MEM_ACCESS_FLAGS_PROT_READ);
  SetAccess(region.base, region.size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CHECK(copy_on(kOther + 2, region.base + kGranule + 16, plain) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(copy_on(kOwner, region.base + kGranule + 16, region.base) == CUDA_SUCCESS);
  EMU_OK(emu.cuCtxSynchronize());
  EMU_OK(emu.cuMemFree_v2(plain));
}

}  // namespace
}  // namespace tally::emu::testing
