// The reported device follows TALLY_EMU_* (set for this test by CMake: 3 SMs, 64 MiB, sm_75).
#include <string>

#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

TEST_CASE("TALLY_EMU_* configure the reported device") {
  const EmuApi& emu = Emu();
  InitPrimaryContext();
  char name[64];
  EMU_OK(emu.cuDeviceGetName(name, sizeof(name), 0));
  CHECK(std::string(name) == "Tiny GPU");
  int value = 0;
  EMU_OK(emu.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  CHECK(value == 3);
  EMU_OK(emu.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  CHECK(value == 7);
  EMU_OK(emu.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  CHECK(value == 5);
  size_t total = 0;
  EMU_OK(emu.cuDeviceTotalMem_v2(&total, 0));
  CHECK(total == 64u << 20);
  // The memory limit is real: more than 64 MiB cannot be allocated.
  CUdeviceptr pointer = 0;
  CHECK(emu.cuMemAlloc_v2(&pointer, 65u << 20) == CUDA_ERROR_OUT_OF_MEMORY);
  EMU_OK(emu.cuMemAlloc_v2(&pointer, 60u << 20));
  EMU_OK(emu.cuMemFree_v2(pointer));
}

}  // namespace
}  // namespace tally::emu::testing
