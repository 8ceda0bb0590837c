// Device queries, the default device description, and contexts (stack, primary, stale handles).
#include <cstring>
#include <string>
#include <thread>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

// Runs `body` on a fresh thread, i.e. with an empty context stack.
template <typename Body>
void OnNewThread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST_CASE("the default device resembles a small sm_80 GPU") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUdevice device = -1;
  EMU_OK(emu.cuDeviceGet(&device, 0));
  CHECK(device == 0);
  CHECK(emu.cuDeviceGet(&device, 1) == CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  EMU_OK(emu.cuDeviceGetName(name, sizeof(name), 0));
  CHECK(std::string(name) == "Tally Emulated GPU");
  char short_name[6];
  EMU_OK(emu.cuDeviceGetName(short_name, sizeof(short_name), 0));
  CHECK(std::string(short_name) == "Tally");
  CHECK(emu.cuDeviceGetName(name, 0, 0) == CUDA_ERROR_INVALID_VALUE);

  auto attribute = [&](CUdevice_attribute which) {
    int value = -1;
    REQUIRE(emu.cuDeviceGetAttribute(&value, which, 0) == CUDA_SUCCESS);
    return value;
  };
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE) == 32);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) == 8);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) == 8);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) == 0);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 1024);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) == 48 * 1024);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == 1);
  CHECK(attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH) == 0);  // not offered
  int value = 0;
  CHECK(emu.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7) ==
        CUDA_ERROR_INVALID_DEVICE);
  CHECK(emu.cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) ==
        CUDA_ERROR_INVALID_VALUE);

  size_t total = 0;
  EMU_OK(emu.cuDeviceTotalMem_v2(&total, 0));
  CHECK(total == 4096ull << 20);
}

// Every attribute of the installed cuda.h (the list generated from it) has an answer, and the
// ones a real A100 answers with more than 0 for features the emulator provides do too.
TEST_CASE("every device attribute of cuda.h is answered") {
  const EmuApi& emu = Emu();
  REQUIRE(emu.cuInit(0) == CUDA_SUCCESS);
  int answered = 0;
  const auto answer = [&](const char* name, int which) {
    INFO("CU_DEVICE_ATTRIBUTE_" << name);
    int value = -12345;
    CHECK(emu.cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(which), 0) ==
          CUDA_SUCCESS);
    CHECK(value != -12345);
    ++answered;
    return value;
  };
#define TALLY_CU_DEVICE_ATTRIBUTE(name, value) answer(#name, value);
#include "cuda_abi/device_attributes.def"
  CHECK(answered > 140);
  for (CUdevice_attribute positive :
       {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE,
        CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
        CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT,
        CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT,
        CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM}) {
    INFO("attribute " << positive);
    CHECK(answer("", positive) > 0);
  }
  int value = 0;
  CHECK(emu.cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(0), 0) ==
        CUDA_ERROR_INVALID_VALUE);
  CUuuid first{}, second{};
  EMU_OK(emu.cuDeviceGetUuid_v2(&first, 0));
  EMU_OK(emu.cuDeviceGetUuid(&second, 0));
  CHECK(std::memcmp(first.bytes, second.bytes, sizeof(first.bytes)) == 0);
}

TEST_CASE("created contexts form a per-thread stack") {
  const EmuApi& emu = Emu();
  CUcontext primary = InitPrimaryContext();
  CUcontext created = nullptr;
  EMU_OK(emu.cuCtxCreate_v4(&created, nullptr, 0, 0));
  CUcontext current = nullptr;
  EMU_OK(emu.cuCtxGetCurrent(&current));
  CHECK(current == created);  // cuCtxCreate pushes the new context
  CUcontext popped = nullptr;
  EMU_OK(emu.cuCtxPopCurrent_v2(&popped));
  CHECK(popped == created);
  EMU_OK(emu.cuCtxGetCurrent(&current));
  CHECK(current == primary);
  EMU_OK(emu.cuCtxPushCurrent_v2(created));
  CUdevice device = -1;
  EMU_OK(emu.cuCtxGetDevice(&device));
  CHECK(device == 0);
  EMU_OK(emu.cuCtxSynchronize());

  // Destroying the current context pops it; its handle is stale from then on.
  EMU_OK(emu.cuCtxDestroy_v2(created));
  EMU_OK(emu.cuCtxGetCurrent(&current));
  CHECK(current == primary);
  CHECK(emu.cuCtxPushCurrent_v2(created) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxSetCurrent(created) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxDestroy_v2(created) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxSynchronize_v2(created) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxPushCurrent_v2(reinterpret_cast<CUcontext>(0x1234)) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxDestroy_v2(primary) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(emu.cuCtxCreate_v2(&created, 0x100000, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(emu.cuCtxCreate_v2(&created, 0, 3) == CUDA_ERROR_INVALID_DEVICE);
}

TEST_CASE("a stale context left on the stack is INVALID_CONTEXT, not a crash") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  CUcontext created = nullptr;
  EMU_OK(emu.cuCtxCreate_v2(&created, 0, 0));
  EMU_OK(emu.cuCtxPopCurrent_v2(nullptr));
  OnNewThread([&] {
    EMU_OK(emu.cuCtxPushCurrent_v2(created));
    OnNewThread([&] { EMU_OK(emu.cuCtxDestroy_v2(created)); });
    CUdeviceptr pointer = 0;
    CHECK(emu.cuMemAlloc_v2(&pointer, 64) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(emu.cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    EMU_OK(emu.cuCtxPopCurrent_v2(nullptr));
  });
}

TEST_CASE("a thread without a context gets INVALID_CONTEXT") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  OnNewThread([&] {
    CUcontext current = reinterpret_cast<CUcontext>(1);
    EMU_OK(emu.cuCtxGetCurrent(&current));
    CHECK(current == nullptr);
    CHECK(emu.cuCtxPopCurrent_v2(&current) == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(emu.cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
    CUstream stream = nullptr;
    CHECK(emu.cuStreamCreate(&stream, 0) == CUDA_ERROR_INVALID_CONTEXT);
    EMU_OK(emu.cuCtxSetCurrent(nullptr));  // popping an empty stack is a no-op
  });
}

TEST_CASE("the primary context is reference counted and reset frees its memory") {
  const EmuApi& emu = Emu();
  CUcontext primary = InitPrimaryContext();
  unsigned flags = 0;
  int active = 0;
  EMU_OK(emu.cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 1);
  CUcontext again = nullptr;
  EMU_OK(emu.cuDevicePrimaryCtxRetain(&again, 0));
  CHECK(again == primary);
  EMU_OK(emu.cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC));
  EMU_OK(emu.cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(flags == CU_CTX_SCHED_BLOCKING_SYNC);
  CHECK(emu.cuDevicePrimaryCtxSetFlags_v2(0, 0x4000000) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuDevicePrimaryCtxSetFlags_v2(0, 0));

  CUdeviceptr pointer = 0;
  EMU_OK(emu.cuMemAlloc_v2(&pointer, 1024));
  EMU_OK(emu.cuDevicePrimaryCtxReset_v2(0));
  CUdeviceptr base = 0;
  CHECK(emu.cuMemGetAddressRange_v2(&base, nullptr, pointer) == CUDA_ERROR_NOT_FOUND);
  EMU_OK(emu.cuMemAlloc_v2(&pointer, 1024));  // still retained, so usable again
  EMU_OK(emu.cuMemFree_v2(pointer));
}

TEST_CASE("context limits: CUDA's defaults, set and read back, unsupported limits") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  size_t value = 0;
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_MALLOC_HEAP_SIZE));
  CHECK(value == 8u << 20);
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_PRINTF_FIFO_SIZE));
  CHECK(value == 1u << 20);
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE));
  CHECK(value == 1024);
  EMU_OK(emu.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE));
  CHECK(value == 4096);
  EMU_OK(emu.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024));
  EMU_OK(emu.cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 1000));  // a hint: clamped
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_MAX_L2_FETCH_GRANULARITY));
  CHECK(value == 128);
  CHECK(emu.cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, 4) == CUDA_ERROR_UNSUPPORTED_LIMIT);
  CHECK(emu.cuCtxGetLimit(&value, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT) ==
        CUDA_ERROR_UNSUPPORTED_LIMIT);
  CHECK(emu.cuCtxGetLimit(&value, CU_LIMIT_MAX) == CUDA_ERROR_UNSUPPORTED_LIMIT);
  CHECK(emu.cuCtxGetLimit(nullptr, CU_LIMIT_STACK_SIZE) == CUDA_ERROR_INVALID_VALUE);
  // A fresh context starts from the defaults.
  CUcontext fresh = nullptr;
  EMU_OK(emu.cuCtxCreate_v2(&fresh, 0, 0));
  EMU_OK(emu.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 1u << 20));
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_MALLOC_HEAP_SIZE));
  CHECK(value == 1u << 20);
  EMU_OK(emu.cuCtxDestroy_v2(fresh));
  EMU_OK(emu.cuCtxGetLimit(&value, CU_LIMIT_MALLOC_HEAP_SIZE));
  CHECK(value == 8u << 20);
}

}  // namespace
}  // namespace tally::emu::testing
