// Driver state: what works before cuInit, what needs it, and cuInit's own errors.
#include "emulator/tests/emu_library.h"

namespace tally::emu::testing {
namespace {

// One test case so that the "before cuInit" part runs first in this process.
TEST_CASE("entry points before and after cuInit") {
  const EmuApi& emu = Emu();
  CUdeviceptr pointer = 0;
  int count = 0;
  CHECK(emu.cuMemAlloc_v2(&pointer, 16) == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(emu.cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  CHECK(emu.cuCtxSynchronize() == CUDA_ERROR_NOT_INITIALIZED);

  // The CUDA runtime looks up cuInit itself, and asks for the version, before initialising.
  int version = 0;
  EMU_OK(emu.cuDriverGetVersion(&version));
  CHECK(version == 13000);
  void* init = nullptr;
  EMU_OK(emu.cuGetProcAddress_v2("cuInit", &init, 13000, 0, nullptr));
  CHECK(init == reinterpret_cast<void*>(emu.cuInit));

  CHECK(emu.cuInit(1) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(emu.cuInit(0));
  EMU_OK(emu.cuInit(0));  // idempotent
  EMU_OK(emu.cuDeviceGetCount(&count));
  CHECK(count == 1);
  // Initialised, but no context is current on this thread yet.
  CHECK(emu.cuMemAlloc_v2(&pointer, 16) == CUDA_ERROR_INVALID_CONTEXT);
}

}  // namespace
}  // namespace tally::emu::testing
