// For the end-to-end programs linked with -lcuda: fail loudly on a driver API error, naming it.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CU(call)                                                                  \
  do {                                                                                  \
    const CUresult check_result_ = (call);                                              \
    if (check_result_ != CUDA_SUCCESS) {                                                \
      const char* name_ = nullptr;                                                      \
      cuGetErrorName(check_result_, &name_);                                            \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, name_); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
