// Loads libtally_emu.so for the tests and resolves the table of implemented entry points.
#include "emulator/tests/emu_library.h"

#include <dlfcn.h>

namespace tally::emu::testing {
namespace {

EmuApi Load() {
  EmuApi api;
  api.library = dlopen(TALLY_EMU_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  INFO(dlerror());
  REQUIRE(api.library != nullptr);
#define TALLY_DRIVER_API(name, version, symbol)                                        \
  api.symbol = reinterpret_cast<PFN_##name##_v##version>(dlsym(api.library, #symbol)); \
  INFO(#symbol);                                                                       \
  REQUIRE(api.symbol != nullptr);
#include "emulator/driver_api.def"
  return api;
}

}  // namespace

const EmuApi& Emu() {
  static const EmuApi api = Load();
  return api;
}

CUcontext InitPrimaryContext() {
  const EmuApi& emu = Emu();
  EMU_OK(emu.cuInit(0));
  CUcontext context = nullptr;
  EMU_OK(emu.cuDevicePrimaryCtxRetain(&context, 0));
  EMU_OK(emu.cuCtxSetCurrent(context));
  return context;
}

CUresult CopyArray(CUarray array, void* host, size_t width_bytes, size_t height, size_t depth,
                   bool to_array) {
  CUDA_MEMCPY3D copy{};
  if (to_array) {
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = host;
    copy.srcPitch = width_bytes;
    copy.srcHeight = height;
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = array;
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = array;
    copy.dstMemoryType = CU_MEMORYTYPE_HOST;
    copy.dstHost = host;
    copy.dstPitch = width_bytes;
    copy.dstHeight = height;
  }
  copy.WidthInBytes = width_bytes;
  copy.Height = height;
  copy.Depth = depth;
  return Emu().cuMemcpy3D_v2(&copy);
}

}  // namespace tally::emu::testing
