// For the end-to-end programs linked with -lcuda: the set-up they share and the check that
// cuGetProcAddress answers what the program itself links.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "check_cu.h"

// cuInit, then device 0's primary context retained and made current; returns the device.
inline CUdevice UsePrimaryContext() {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  return device;
}

// Loads `image` (PTX text) into *module; the function `name` in it.
inline CUfunction LoadFunction(CUmodule* module, const char* image, const char* name) {
  CHECK_CU(cuModuleLoadData(module, image));
  CUfunction function = nullptr;
  CHECK_CU(cuModuleGetFunction(&function, *module, name));
  return function;
}

// cuGetProcAddress(name, version) must give the function exported as `symbol`, which is what
// the program's own references to the name (as cuda.h maps it) bind to.
inline void ExpectProcAddress(const char* name, int version, const char* symbol) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status;
  CHECK_CU(cuGetProcAddress(name, &function, version, CU_GET_PROC_ADDRESS_DEFAULT, &status));
  if (status != CU_GET_PROC_ADDRESS_SUCCESS || function == nullptr ||
      function != dlsym(RTLD_DEFAULT, symbol)) {
    std::fprintf(stderr, "cuGetProcAddress(%s, %d) is not %s\n", name, version, symbol);
    std::exit(1);
  }
}
