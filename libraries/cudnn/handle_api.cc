// cuDNN's handles, versions and error strings.
#include <cuda_runtime_api.h>

#include "libraries/cudnn/descriptors.h"

using namespace tally::libraries::cudnn;  // NOLINT: the C entry points below

extern "C" {

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  return Live<Handle>::CreateEntry(__func__, handle);
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  return CudnnCall(__func__, [&] { Live<Handle>::Destroy(handle); });
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return CudnnCall(__func__, [&] { FindHandle(handle).stream = stream; });
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  return CudnnCall(__func__, [&] {
    const Handle& live = FindHandle(handle);
    RequireNotNull(stream, "the stream pointer");
    *stream = live.stream;
  });
}

// The version of the toolkit's cuDNN the stand-in was built with: its API is what it answers.
size_t cudnnGetVersion() { return CUDNN_VERSION; }
size_t cudnnGetMaxDeviceVersion() { return CUDNN_MAX_DEVICE_VERSION; }
size_t cudnnGetCudartVersion() { return CUDART_VERSION; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  return CudnnCall(__func__, [&] {
    RequireNotNull(value, "the value pointer");
    switch (type) {
      case MAJOR_VERSION:
        *value = CUDNN_MAJOR;
        return;
      case MINOR_VERSION:
        *value = CUDNN_MINOR;
        return;
      case PATCH_LEVEL:
        *value = CUDNN_PATCHLEVEL;
        return;
    }
    Refuse(CUDNN_STATUS_BAD_PARAM, "unknown library property");
  });
}

const char* cudnnGetErrorString(cudnnStatus_t status) { return StatusName(status); }

void cudnnGetLastErrorString(char* message, size_t max_size) { CopyLastError(message, max_size); }

// The sub-libraries' version checks: the stand-in is one library, consistent with itself.
cudnnStatus_t cudnnGraphVersionCheck() { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck() { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck() { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnAdvVersionCheck() { return CUDNN_STATUS_SUCCESS; }

}  // extern "C"
