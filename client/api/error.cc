// Error reporting: the calling thread's last error and the names and descriptions of codes.
#include <cuda_runtime_api.h>

#include "client/entry.h"
#include "client/status.h"

extern "C" {

cudaError_t cudaGetLastError() { return tally::client::LastError(/*reset=*/true); }

cudaError_t cudaPeekAtLastError() { return tally::client::LastError(/*reset=*/false); }

// Unknown codes get the runtime's own answer for them (CUDA Runtime API, cudaGetErrorName).
const char* cudaGetErrorName(cudaError_t error) {
  const char* name = tally::client::ErrorName(error);
  return name != nullptr ? name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  const char* description = tally::client::ErrorDescription(error);
  return description != nullptr ? description : "unrecognized error code";
}

}  // extern "C"
