// How every cuDNN entry point of the stand-in runs: inside CudnnCall, the exception barrier of
// the C ABI. A check that fails throws a Refusal (the documented status and why), which CudnnCall
// turns into the status and keeps as the thread's last error message (cudnnGetLastErrorString); a
// call Tally's kernels cannot serve is also said once per entry point on stderr.
#pragma once

#include <cudnn.h>

#include <new>
#include <string>

#include "client/library_call_scope.h"
#include "ipc/library_calls.h"
#include "libraries/kernels/dnn_kernels.h"

namespace tally::libraries::cudnn {

struct Refusal {
  cudnnStatus_t status;
  std::string why;
};

[[noreturn]] void Refuse(cudnnStatus_t status, std::string why);
// NOT_SUPPORTED (or one of its sub-codes): what Tally's kernels lack.
[[noreturn]] void RefuseUnsupported(std::string what,
                                    cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED);
inline void Require(bool holds, cudnnStatus_t status, const char* why) {
  if (!holds) Refuse(status, why);
}
template <typename T>
void RequireNotNull(const T* pointer, const char* what) {
  if (pointer == nullptr) Refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(what) + " is null");
}

// Answers a size query whose answer is that no memory is needed.
inline void PutZeroSize(size_t* size) {
  RequireNotNull(size, "the size pointer");
  *size = 0;
}

// Throws for a launch of Tally's kernels that failed.
void CheckLaunch(cudaError_t launched);

// Keeps the refusal as the thread's last error (and says a NOT_SUPPORTED one on stderr, once per
// entry point); returns its status.
cudnnStatus_t Record(const char* api, const Refusal& refusal);

// cudnnGetErrorString: the status's name ("CUDNN_STATUS_UNKNOWN" for another value).
const char* StatusName(cudnnStatus_t status);
// cudnnGetLastErrorString: the thread's last message into `message` (at most max_size bytes,
// terminated), "" when there is none.
void CopyLastError(char* message, size_t max_size);

// Every entry point's barrier; its first kernel launch counts it as a cuDNN call
// (client/library_call_scope.h).
template <typename Body>
cudnnStatus_t CudnnCall(const char* api, Body&& body) noexcept {
  const client::LibraryCallScope call(ipc::Library::kCudnn);
  try {
    body();
    return CUDNN_STATUS_SUCCESS;
  } catch (const Refusal& refusal) {
    return Record(api, refusal);
  } catch (const std::bad_alloc&) {
    return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  } catch (...) {
    return CUDNN_STATUS_INTERNAL_ERROR;  // never across the C ABI
  }
}

// cuDNN's data types as Tally's kernels take them; NOT_SUPPORTED_DATA_TYPE for the others.
kernels::ElementType ElementTypeOf(cudnnDataType_t type);
// A host scalar (alpha, beta, ...) in the type cuDNN reads it as: double for double data, float
// for the others.
double ReadScalar(const void* scalar, cudnnDataType_t data, const char* what);
// One element of `type` in host memory (cudnnSetTensor's value, a by-value tensor), as double.
double ReadHostElement(const void* value, kernels::ElementType type);
// alpha and beta of a call on `data`.
kernels::Blend ReadBlend(const void* alpha, const void* beta, cudnnDataType_t data);

}  // namespace tally::libraries::cudnn
