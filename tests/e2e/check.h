// Shared by the end-to-end programs: fail loudly (non-zero exit) on any CUDA error or mismatch.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                                              \
  do {                                                                                \
    const cudaError_t check_error_ = (call);                                          \
    if (check_error_ != cudaSuccess) {                                                \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,  \
                   cudaGetErrorName(check_error_), cudaGetErrorString(check_error_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#define EXPECT(cond)                                                                      \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
