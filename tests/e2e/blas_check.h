// Shared by the BLAS end-to-end programs (cublas_calls, cublaslt_calls): CHECK_CUBLAS, beside the
// generic helpers of device_vectors.h (inputs, copies, comparison with a CPU reference).
#pragma once

#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>

#include "device_vectors.h"

// A cuBLAS or cuBLASLt call (both answer cublasStatus_t) that must succeed.
#define CHECK_CUBLAS(call)                                                      \
  do {                                                                          \
    const cublasStatus_t status_ = (call);                                      \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                     \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cublasGetStatusName(status_));                               \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
