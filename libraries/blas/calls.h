// What the BLAS stand-ins (cuBLAS, cuBLASLt) share about a call: the status of a launch of
// Tally's kernels, the NOT_SUPPORTED answer that names what is missing, scalars as the kernels
// take them, and the exception barrier every entry point runs in, which marks the library call.
#pragma once

#include <cublas_v2.h>

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "client/library_call_scope.h"
#include "ipc/library_calls.h"
#include "libraries/kernels/blas_kernels.h"

namespace tally::libraries {

// The status of a launch of Tally's kernels.
cublasStatus_t FromLaunch(cudaError_t launched);

// NOT_SUPPORTED for a call Tally's kernels cannot serve, naming what is missing on stderr (once
// per entry point).
cublasStatus_t NotSupported(const char* api, std::string_view what);

// cublasGetProperty and cublasLtGetProperty: the version of the toolkit's cuBLAS the stand-ins
// were built with (its API is what they answer).
cublasStatus_t LibraryProperty(libraryPropertyType type, int* value);

// cublasGetStatusName and cublasGetStatusString (also cuBLASLt's): "UNKNOWN" for other values.
const char* StatusName(cublasStatus_t status);
const char* StatusDescription(cublasStatus_t status);

// A scalar argument as the kernels take it: read now where it is in host memory, else its
// device address (read by the kernel).
kernels::Scalar ReadScalar(bool on_device, const void* scalar, kernels::ElementType type);

// A scalar argument as a call to the vendor library carries it (ipc/vendor_calls.h): its device
// address, or its `bytes` bytes (at most 16).
void PutScalar(bool on_device, const void* scalar, size_t bytes, std::byte (&out)[16]);

// The element type of the float and double entry points (cublasS..., cublasD...).
template <typename T>
constexpr kernels::ElementType kElement =
    std::is_same_v<T, double> ? kernels::ElementType::kF64 : kernels::ElementType::kF32;

// Every entry point's barrier, naming its library (ipc::Library::kCublas or kCublasLt), whose
// call its first kernel launch counts (client/library_call_scope.h).
template <ipc::Library kLibrary, typename Body>
cublasStatus_t BlasCall(Body&& body) noexcept {
  const client::LibraryCallScope call(kLibrary);
  try {
    return body();
  } catch (...) {
    return CUBLAS_STATUS_INTERNAL_ERROR;  // std::bad_alloc: never across the C ABI
  }
}

}  // namespace tally::libraries
