// Test access to libtally_emu.so: dlopen-ed once, every entry point of driver_api.def resolved
// by dlsym (which also proves that each one is exported), plus a fixture context.
#pragma once

// Name every versioned symbol as itself (cuStreamDestroy and cuStreamDestroy_v2), as the
// library's own table does.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include <catch2/catch.hpp>

namespace tally::emu::testing {

struct EmuApi {
  void* library = nullptr;
#define TALLY_DRIVER_API(name, version, symbol) PFN_##name##_v##version symbol = nullptr;
#include "emulator/driver_api.def"
};

// The loaded library; the test fails if it cannot be loaded or lacks a symbol.
const EmuApi& Emu();

// cuInit + the retained primary context made current (what the CUDA runtime does).
CUcontext InitPrimaryContext();

// Copies `host` (rows of width_bytes, packed) into (`to_array`) or out of a whole array.
CUresult CopyArray(CUarray array, void* host, size_t width_bytes, size_t height, size_t depth,
                   bool to_array);

}  // namespace tally::emu::testing

#define EMU_OK(call) REQUIRE((call) == CUDA_SUCCESS)
